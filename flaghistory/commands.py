"""A documented command seen through the option history: the releases on which all its
options exist, and why an option a build rejected is missing there (removed when, deprecated
with which words, replaced by what — vLLM's own texts)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from packaging.version import Version

from driftmatrix.flaghistory import nearest
from driftmatrix.flaghistory.head import head_words
from driftmatrix.flaghistory.history import FlagHistory, HistoryError, token
from driftmatrix.flaghistory.uses import Use, uses_of

UNRECOGNIZED = re.compile(r"unrecognized arguments?: (.+)")


@lru_cache(maxsize=1)
def shipped() -> FlagHistory | None:
    """The history publishing reads (the shipped copy or DRIFTMATRIX_FLAG_HISTORY); None if unusable."""
    try:
        return FlagHistory.load()
    except HistoryError:
        return None


@dataclass
class CommandOptions:
    """The option-level range of one command (its values and model are not judged here)."""

    options: list[str]
    first: str | None
    """First release of the newest unbroken run on which every option exists (None: no release)."""
    last: str | None
    newest: str
    """The newest release read: `last == newest` means still valid today."""
    oldest: str
    unknown: list[str] = field(default_factory=list)
    """Options no release read accepts (a typo, a plugin's option, a placeholder)."""
    nearest: dict[str, list[str]] = field(default_factory=dict)
    """Unknown → the names the newest release has nearest to it (flaghistory/nearest.py), where any."""

    def text(self) -> str:
        if self.first is None:
            why = f" ({', '.join(f'{u}' for u in self.unknown)}: in none)" if self.unknown else ""
            return f"no vLLM release from {self.oldest} to {self.newest} accepts all its options{why}"
        if self.last == self.newest and self.first == self.oldest:
            return f"options valid in every release read ({self.oldest} through {self.newest})"
        if self.last == self.newest:
            return f"options valid from {self.first} through {self.newest}, the newest release read"
        return f"options valid from {self.first} to {self.last}"

    def as_json(self) -> dict:
        return {
            "first": self.first,
            "last": self.last,
            "newest": self.newest,
            "unknown": self.unknown,
            "nearest": self.nearest,
            "text": self.text(),
        }


def options_of(argv: list[str]) -> list[str]:
    return list(dict.fromkeys(a.split("=", 1)[0] for a in argv if token(a) is not None and not a[1:2].isdigit()))


def command_options(history: FlagHistory, argv: list[str]) -> CommandOptions | None:
    """The releases on which every option, value and key of the command exists (flaghistory/uses.py)."""
    uses = uses_of(history, argv)
    if not uses or not history.releases:
        return None
    given = frozenset(u.option for u in uses)
    valid = history.valid_range(uses, given)
    never = [u for u in uses if _never(history, u, given)]
    near = {u.text(): list(names) for u in never if (names := nearest.nearest(history, u, history.releases[-1]))}
    return CommandOptions(
        options_of(argv),
        valid[0] if valid else None,
        valid[1] if valid else None,
        history.releases[-1],
        history.releases[0],
        [u.text() for u in never],
        near,
    )


def _never(history: FlagHistory, use, given: frozenset[str]) -> bool:
    """No release read takes it, and some refuse it (releases whose names were not read say nothing)."""
    answers = {history.accepts_use(use, r, given) for r in history.releases}
    return True not in answers and False in answers


def vllm_said(record: dict) -> str:
    """What vLLM's own text said of a removed option, value or key: its deprecation, its replacement."""
    said = f"; vLLM {record['deprecated']} deprecated it: “{record['deprecation']}”" if record.get("deprecated") else ""
    return said + (f" (vLLM's text names {record['replacement']} instead)" if record.get("replacement") else "")


def _back(history: FlagHistory, record: dict, version: str) -> str:
    """Where a removed name came back after `version` (the end of the gap holding it)."""
    wanted = Version(version)
    for _, last in record.get("gaps", []):
        if wanted <= Version(last) and last in history.releases[:-1]:
            return f"; taken again from vLLM {history.releases[history.releases.index(last) + 1]}"
    return ""


def explain(history: FlagHistory, option: str, version: str) -> str | None:
    """Why `version` rejects the option, from the history; None when the history says it accepts it."""
    if history.accepts(option, version) is not False:
        return None
    record = history.record(option)
    if record is None:
        use = nearest.option_use(history, option)
        return f"{option} is not an option of any vLLM release from {history.releases[0]} to {history.releases[-1]}" + (
            nearest.hint(history, use, version) if use else ""
        )
    if said := head_words(history, record, option, version):  # the change's own head: its words
        return said
    if gone := history.removal(record, version):  # removed, or a gap before it came back
        return f"{option} was removed in vLLM {gone}{vllm_said(record)}{_back(history, record, version)}"
    if Version(version) < Version(record["added"]):
        unread = unread_before(history, record["added"])
        return (
            f"{option} was added in vLLM {record['added']}"
            if not unread
            else f"{option} first appears in vLLM {record['added']} of the releases read ({', '.join(unread)} could not be read)"
        )
    return f"{option} is not in vLLM {version} (releases it is in: from {record['added']})"


def unread_before(history: FlagHistory, release: str) -> list[str]:
    """Releases between the one read before `release` and it that could not be read (no sdist)."""
    i = history.releases.index(release) if release in history.releases else 0
    low = Version(history.releases[i - 1]) if i > 0 else None
    return sorted(
        (
            v
            for v in history.data.get("diagnostics", {})
            if (p := _version(v)) is not None and (low is None or p > low) and p < Version(release)
        ),
        key=Version,
    )


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except ValueError:
        return None


def rejected_tokens(message: str | None) -> list[str]:
    """Everything argparse left over in `unrecognized arguments: --swap-space 4` (values too)."""
    found = UNRECOGNIZED.search(message or "")
    return found.group(1).split() if found else []


def rejected_options(message: str | None) -> list[str]:
    """The options argparse named in `unrecognized arguments: --swap-space 4`."""
    return [t for t in rejected_tokens(message) if token(t) is not None]


INVALID_CHOICE = re.compile(r"argument (-[\w-]+)(?:/-[\w-]+)*: invalid choice: '([^']*)'")
"""argparse's own words for a value its `choices` lack."""
INVALID_NAME = re.compile(r"invalid (tool call|reasoning) parser: ([^\s'\"(]+)")
"""vLLM's words when a tool-call or reasoning parser name is not registered (at the server's start)."""
NAMED = {"tool call": "--tool-call-parser", "reasoning": "--reasoning-parser"}


UNKNOWN_KEY = re.compile(r"argument (-[\w-]+)(?:/-[\w-]+)*: \d+ validation errors? for \w+\n((?:\S+\n\s+.*\n?)+)")
"""pydantic's words, through argparse, for a JSON option's config given keys it lacks."""
KEY_ERROR = re.compile(r"^(\S+)\n\s+(?:Unexpected keyword argument|Extra inputs are not permitted)", re.M)


def refused_uses(history: FlagHistory, message: str | None) -> list:
    """The option values and config keys a build's error names as unknown, as driftmatrix.flaghistory.uses.Use."""
    text = message or ""
    found = [Use("value", history.canonical(o), o, value=v) for o, v in INVALID_CHOICE.findall(text)]
    found += [Use("value", NAMED[kind], NAMED[kind], value=v) for kind, v in INVALID_NAME.findall(text)]
    for option, errors in UNKNOWN_KEY.findall(text):
        found += [Use("key", history.canonical(option), option, key=key) for key in KEY_ERROR.findall(errors)]
    return list(dict.fromkeys(found))


def explain_failure(history: FlagHistory | None, message: str | None, version: str) -> list[str]:
    """Why the build rejected what its error names (options argparse left over, values it refused),
    from the history and in vLLM's words."""
    if history is None:
        return []
    said = [e for o in rejected_options(message) if (e := explain(history, o, version))]
    return said + [e for u in refused_uses(history, message) if (e := explain_use(history, u, version))]


def _use_name(history: FlagHistory, use) -> tuple[str, str]:
    """(how the use is shown, the names it is one of) for the explanations."""
    if use.kind == "key":
        cls = history.keys.get(use.option, {}).get("class") or "its config"
        return f"`{use.key}`", f"the keys of {use.option} ({cls})"
    domain = history.values.get(use.domain, {}).get("domain")
    return f"`{use.text()}`", f"the {domain}" if domain else f"the values of {use.domain}"


def explain_use(history: FlagHistory, use, version: str) -> str | None:
    """Why `version` rejects an option, a value or a key, from the history and in vLLM's words;
    None when the history says it accepts it or cannot say."""
    if history.accepts_use(use, version) is not False:
        return None
    if use.kind == "option":
        return explain(history, use.written, version)
    if use.kind == "argument":
        return _argument_words(history, use, version)
    shown, names = _use_name(history, use)
    record = history.value_record(use)
    if record is None:
        return f"{shown} is in none of {names} of vLLM {history.releases[0]} to {history.releases[-1]}" + nearest.hint(
            history, use, version
        )
    if said := head_words(history, record, shown, version, names):
        return said
    if gone := history.removal(record, version):
        return f"{shown} was removed from {names} in vLLM {gone}{vllm_said(record)}{_back(history, record, version)}"
    if Version(version) < Version(record["added"]):
        return f"{shown} is known from vLLM {record['added']} ({names})"
    return f"{shown} is not in {names} of vLLM {version}"


def _argument_words(history: FlagHistory, use, version: str) -> str:
    """argparse's words, as vLLM's parser of that release prints them (`argument --x/-x: …`)."""
    answer = history.argument(use, version)
    names = "/".join([use.option, *sorted(a for a, o in history.aliases.items() if o == use.option)])
    words = answer.words if answer else ""
    head = "" if words.startswith("unrecognized") else f"argument {names}: "
    return f"`{use.text()}`: {head}{words} (vLLM {version}'s parser)"


def record_of(history: FlagHistory, use) -> dict | None:
    """The history's record of an option, a value or a key (its span and vLLM's words); None: no
    release read has it, or an argument (what an option takes has no span of its own to show)."""
    if use.kind == "argument":
        return None
    return history.flags.get(use.option) if use.kind == "option" else history.value_record(use)


def deprecation_of(history: FlagHistory, use, version: str) -> dict | None:
    """{since, text, replacement} when vLLM had deprecated the option, value or key by `version`."""
    record = record_of(history, use)
    since = (record or {}).get("deprecated")
    if not since or Version(version) < Version(since):
        return None
    if any(Version(since) <= Version(a) and Version(b) < Version(version) for a, b in record.get("gaps", [])):
        return None  # removed after that deprecation and taken again since (0.33.0's `--disable-log-requests`)
    return {"since": since, "text": record.get("deprecation"), "replacement": record.get("replacement")}
