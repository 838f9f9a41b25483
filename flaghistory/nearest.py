""" "Did you mean": the names a release has nearest to an option, value or key that no release read
has (issue 46, point 2). `--tool-call-parser-plugin` is in no release; saying only so leaves the
reader to search 400-odd options for `--tool-parser-plugin`. The names offered are that release's
own (FlagHistory.options, the value domain's or the JSON option's keys within the release), so a
suggestion is never a name the reader's release lacks.

Only for a name no release read has: one some release has (removed, not yet added) has its own
story, in vLLM's words, and a near spelling of another name would only distract from it.

How near: difflib's ratio on a folded form (no leading dashes, lower case, `-` read as `_`, so
`num-speculative-tokens` is `num_speculative_tokens` exactly). A name whose words lead the other's
(`--port-number` and `--port`, `--gpu-memory` and `--gpu-memory-utilization`), or that an ambiguous
abbreviation starts (`--max-num`), counts as just near enough to offer. A name of the other
polarity (`--disable-x` for `--enable-x`, a `--no-x` twin) is never offered: it would invert what
the command asks.

The cutoffs were set on the shipped history (0.34.0's 443 options): every one-character typo
(dropped, swapped, added `s`) ranks its option first at ≥ 0.75; below 0.75 sit the names of other
tools (`--torch-dtype` 0.76 `--lora-dtype` is the worst offered), above it a dropped or added word
(`--tool-call-parser-plugin` 0.88). A *clear* nearest name — the one a fix candidate may use
(publisher/nearest_fix.py) — needs 0.8 and a lead of 0.05 over the next: about 96 in 100 dropped or
added words then pick the right option; a run decides the rest (the fix is verified only by running).
"""

from __future__ import annotations

from difflib import SequenceMatcher
from functools import lru_cache

from driftmatrix.flaghistory.history import FlagHistory, token
from driftmatrix.flaghistory.uses import Use

OFFER = 0.75
"""The least score a name is offered at ("did you mean")."""
CLEAR = 0.8
"""The least score of a clear nearest name (a fix candidate)."""
LEAD = 0.05
"""How far a clear nearest name must lead the next one."""
MOST = 3
"""At most this many names: a list longer than that is no suggestion."""


def form(name: str) -> str:
    """How names are compared: no leading dashes, lower case, `-` as `_` (vLLM reads an option's
    `_` as `-`; keys and many values are written either way in the docs)."""
    return name.lstrip("-").lower().replace("-", "_")


def _negative(folded: str) -> bool:
    return folded.startswith(("disable_", "no_"))


def _leads(short: str, long: str) -> bool:
    """`short`'s words are the first words of `long` (`port` of `port_number`), or `short` is an
    abbreviation argparse could not resolve (`max_n` of `max_num_seqs`); 4 characters at least."""
    return 4 <= len(short) < len(long) and long.startswith(short)


def score(asked: str, name: str) -> float:
    """How near `name` is to `asked`: 1.0 for the same folded name, else difflib's ratio, raised to
    OFFER where one name leads the other; 0 for the other polarity."""
    a, b = form(asked), form(name)
    if a == b:
        return 1.0
    if _negative(a) != _negative(b):
        return 0.0
    ratio = SequenceMatcher(None, a, b).ratio()
    return max(ratio, OFFER) if _leads(a, b) or _leads(b, a) else ratio


def names_in(history: FlagHistory, use: Use, release: str) -> list[str]:
    """The release's own names of the use's kind: its options (long ones for a long option), the
    domain's values, the JSON option's keys; [] where the history did not read them for it."""
    if use.kind == "option":
        long = use.option.startswith("--")
        return sorted(o for o in history.options(release) if o.startswith("--") == long)
    if use.kind == "key":
        domain = history.keys.get(use.option) or {}
        entries = domain.get("keys") or {}
    elif use.kind == "value":
        domain = history.values.get(use.domain) or {}
        entries = domain.get("values") or {}
    else:
        return []  # a kind this module does not know names for
    if not history.within(domain.get("read"), release):
        return []
    return sorted(n for n, record in entries.items() if history.within(record, release))


def asked_name(use: Use) -> str | None:
    return {"option": use.option, "key": use.key, "value": use.value}.get(use.kind)


def known_anywhere(history: FlagHistory, use: Use) -> bool:
    """Some release read has it (then its own story is told, not a near name)."""
    if use.kind == "option":
        return use.option in history.flags or use.option in history.aliases
    return history.value_record(use) is not None


def ranked(history: FlagHistory, use: Use, version: str) -> list[tuple[float, str]]:
    """(score, name), best first, for every name of the release offered for the use."""
    release, asked = history.release_for(version), asked_name(use)
    if release is None or not asked or known_anywhere(history, use):
        return []
    names = names_in(history, use, release)
    if asked in names:
        return []
    scored = [(score(asked, n), n) for n in names]
    raw = {n: SequenceMatcher(None, form(asked), form(n)).ratio() for s, n in scored if s >= OFFER}
    return sorted(((s, n) for s, n in scored if s >= OFFER), key=lambda p: (-p[0], -raw[p[1]], p[1]))


@lru_cache(maxsize=4096)
def nearest(history: FlagHistory, use: Use, version: str) -> tuple[str, ...]:
    """The names `version`'s release has nearest to a use no release read has, best first (at most
    MOST; a clear one alone: the others only blur it); () when none is near enough, or the history
    knows the name somewhere."""
    one = clear(history, use, version)
    return (one,) if one else tuple(n for _, n in ranked(history, use, version)[:MOST])


def clear(history: FlagHistory, use: Use, version: str) -> str | None:
    """The one nearest name, when it is near (CLEAR) and leads every other by LEAD; else None."""
    found = ranked(history, use, version)
    if not found or found[0][0] < CLEAR or (len(found) > 1 and found[1][0] > found[0][0] - LEAD):
        return None
    return found[0][1]


def shown(use: Use, name: str) -> str:
    """An option as itself (as the history's sentences show options), a value or key in backticks."""
    return name if use.kind == "option" else f"`{name}`"


def did_you_mean(use: Use, names: tuple[str, ...] | list[str]) -> str:
    """`did you mean --tool-parser-plugin?`, `did you mean `a`, `b` or `c`?`; "" for no names."""
    if not names:
        return ""
    said = [shown(use, n) for n in names]
    return "did you mean " + (said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]) + "?"


def hint(history: FlagHistory, use: Use, version: str) -> str:
    """`; did you mean …?` to end a sentence saying the release rejects the use; "" when nothing is near."""
    text = did_you_mean(use, nearest(history, use, version))
    return f"; {text}" if text else ""


def option_use(history: FlagHistory, text: str) -> Use | None:
    """The Use of an option as a command writes it (`--tool_call_parser_plugin`)."""
    parsed = token(text)
    return Use("option", history.canonical(parsed.name), text.split("=", 1)[0]) if parsed else None
