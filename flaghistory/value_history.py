"""Folds the per-release value and key reads into the history's `values` and `keys` maps.

Spans are the options' spans (build._spans). `read` runs over every release read; a value's or
key's own span runs over the releases whose sources gave that option's set (outside `read` an
answer is unknown, so a release that was not read must not look like a removal). The domain's
words (`from`, `where`, `fold`, `open_with`, `model_dependent`) are the newest read release's.
"""

from __future__ import annotations

from collections.abc import Callable

Spans = Callable[[list[bool], list[str]], dict]


def _deprecation(said: list[tuple[str, dict]]) -> dict:
    """First release that says so; the latest text naming a replacement (else the latest text)."""
    if not said:
        return {}
    best = next((d for _, d in reversed(said) if d.get("replacement")), said[-1][1])
    return {"deprecated": said[0][0], "deprecation": best["text"], "replacement": best.get("replacement")}


def _members(sets: list[tuple[str, list[str], dict]], spans: Spans) -> dict[str, dict]:
    """{name: span (+ deprecation)} over the (release, names, deprecated) of the releases read."""
    releases = [r for r, _, _ in sets]
    members = {}
    for name in sorted({n for _, names, _ in sets for n in names}):
        record = spans([name in names for _, names, _ in sets], releases)
        record.update(_deprecation([(r, d[name]) for r, _, d in sets if name in (d or {})]))
        members[name] = record
    return members


def _reads(reads: list, attribute: str) -> tuple[list, list[str]]:
    usable = [r for r in reads if getattr(r, attribute, None) is not None]
    return usable, [r.version for r in usable]


def _per_option(usable: list, attribute: str, members: str):
    """(option, whether each release read has it, its newest read, [(release, its names, deprecated)])."""
    for option in sorted({o for r in usable for o in getattr(r, attribute)}):
        held = [getattr(r, attribute).get(option) for r in usable]
        newest = next(h for h in reversed(held) if h is not None)
        sets = [(r.version, h[members], h["deprecated"]) for r, h in zip(usable, held) if h is not None]
        yield option, [h is not None for h in held], newest, sets


def fold_values(reads: list, spans: Spans) -> dict[str, dict]:
    usable, releases = _reads(reads, "values")
    result = {}
    for option, present, newest, sets in _per_option(usable, "values", "values"):
        record = {
            "domain": newest["domain"],
            "from": newest["from"],
            "where": newest["where"],
            "read": spans(present, releases),
            "open_with": newest["open_with"],
            "model_dependent": newest["model_dependent"],
        }
        if newest.get("fold"):
            record["fold"] = newest["fold"]
        record.update(_open(option, usable, releases, spans))
        record["values"] = _members(sets, spans)
        result[option] = record
    return result


def _open(option: str, usable: list, releases: list[str], spans: Spans) -> dict:
    """{"open": span + "type"} over the releases whose field type admits any string beside the names
    (0.33.0's `CacheDType | str`, not 0.32.0's `CacheDType`); nothing when none does."""
    typed = [r.values[option].get("open") if option in r.values else None for r in usable]
    if not any(typed):
        return {}
    return {"open": {**spans([bool(t) for t in typed], releases), "type": next(t for t in reversed(typed) if t)}}


def fold_keys(reads: list, spans: Spans) -> dict[str, dict]:
    usable, releases = _reads(reads, "keys")
    result = {}
    for option, present, newest, sets in _per_option(usable, "keys", "keys"):
        shut = [option in r.keys and r.keys[option]["closed"] for r in usable]
        result[option] = {
            "class": newest["class"],
            "where": newest["where"],
            "read": spans(present, releases),
            "closed": spans(shut, releases) if any(shut) else None,
            "keys": _members(sets, spans),
        }
    return result


def fold_args(reads: list, spans: Spans) -> dict[str, dict[str, dict]]:
    """{option: {spec: span}}: what the option takes after it, release by release (arg_types.py); a
    release whose arguments were not read is in no spec's span (the history cannot say there)."""
    usable, releases = _reads(reads, "args")
    result: dict[str, dict[str, dict]] = {}
    for option in sorted({o for r in usable for o in r.args}):
        held = [r.args.get(option) for r in usable]
        result[option] = {
            spec: spans([h == spec for h in held], releases)
            for spec in sorted({h for h in held if h and h != "unknown"})
        }
    return result
