"""Folds the per-release value and key reads into the history's `values` and `keys` maps.

Spans are the options' spans (build._spans). `read` runs over every release read; a value's or
key's own span runs over the releases whose sources gave that option's set (outside `read` an
answer is unknown, so a release that was not read must not look like a removal). The domain's
words (`from`, `where`, `fold`, `open_with`, `model_dependent`) are the newest read release's.
"""

from __future__ import annotations

from typing import Callable

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


def fold_values(reads: list, spans: Spans) -> dict[str, dict]:
    usable, releases = _reads(reads, "values")
    result = {}
    for option in sorted({o for r in usable for o in r.values}):
        present = [option in r.values for r in usable]
        newest = next(r.values[option] for r in reversed(usable) if option in r.values)
        record = {"domain": newest["domain"], "from": newest["from"], "where": newest["where"],
                  "read": spans(present, releases), "open_with": newest["open_with"],
                  "model_dependent": newest["model_dependent"]}
        if newest.get("fold"):
            record["fold"] = newest["fold"]
        sets = [(r.version, r.values[option]["values"], r.values[option]["deprecated"]) for r in usable
                if option in r.values]
        record["values"] = _members(sets, spans)
        result[option] = record
    return result


def fold_keys(reads: list, spans: Spans) -> dict[str, dict]:
    usable, releases = _reads(reads, "keys")
    result = {}
    for option in sorted({o for r in usable for o in r.keys}):
        present = [option in r.keys for r in usable]
        newest = next(r.keys[option] for r in reversed(usable) if option in r.keys)
        shut = [option in r.keys and r.keys[option]["closed"] for r in usable]
        sets = [(r.version, r.keys[option]["keys"], r.keys[option]["deprecated"]) for r in usable if option in r.keys]
        result[option] = {"class": newest["class"], "where": newest["where"], "read": spans(present, releases),
                          "closed": spans(shut, releases) if any(shut) else None, "keys": _members(sets, spans)}
    return result
