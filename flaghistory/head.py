"""The option history with one more, newest "release": the sources of a vLLM checkout (a pull
request's head, a working tree), read by the same reader as every release.

In vLLM's own repository a docs page on main is written for the code beside it, not for a
release: a page that documents an option the change adds must pass, and one that keeps an option
the change removes must fail. So the head's read (a `driftmatrix.flaghistory.build.ReleaseRead`) is folded into
the spans of the shipped history exactly as `build.assemble` would have folded it as the newest
release — an option the head lacks gets `removed=<head>`, one only the head has `added=<head>`, one
the head brings back a gap — and every reader of the history (`check_argv`, `explain_use`) answers
for the head like for any release. The head's label is a PEP 440 version after every release the
history holds (`0.34.0+head.1a2b3c4`): local versions sort after their public one, and
`FlagHistory.release_for(label)` finds the label itself, never the public release.

Pure functions on the history's JSON; where the sources come from is flaghistory/head_sources.py.
"""

from __future__ import annotations

import copy

from packaging.version import Version

from driftmatrix.flaghistory.history import FlagHistory, _indexes

HEAD_KINDS = ("head", "worktree")
"""`head`: a commit's sources (the gate); `worktree`: a checkout's files as they are (`check`)."""


class HeadError(ValueError):
    """The head's sources gave no serve options (nothing to judge against)."""


def head_label(history_data: dict, kind: str, ident: str) -> str:
    """`<newest release>+<kind>.<ident>`: after every release the history holds, saying what it is."""
    assert kind in HEAD_KINDS, kind
    clean = "".join(c for c in ident.lower() if c.isalnum())[:12] or "unknown"
    label = f"{Version(history_data['releases'][-1]).public}+{kind}.{clean}"
    Version(label)  # a PEP 440 version, or a bug here
    return label


# -- one span, one release more -----------------------------------------------------------------
def extend(record: dict | None, present: bool, label: str, last: str | None) -> dict | None:
    """A span (`added`, `removed`, `gaps`) with the head appended after `last`, the newest release
    of the releases the span runs over (build._spans' fold, one release at a time)."""
    if record is None:
        return {"added": label, "removed": None} if present else None
    record = dict(record)
    if present and record.get("removed"):  # back in the head: the releases between are a gap
        record["gaps"] = [*record.get("gaps", []), [record["removed"], last]]
        record["removed"] = None
    elif not present and not record.get("removed"):
        record["removed"] = label
    return record


def said(record: dict, text: dict | None, label: str) -> dict:
    """The deprecation fields with the head's words folded in: the first release that says so, the
    latest text naming a replacement, else the latest text (build._deprecation's rule)."""
    if not text:
        return record
    record = dict(record)
    if not record.get("deprecated"):
        record.update(deprecated=label, deprecation=text["text"], replacement=text.get("replacement"))
    elif text.get("replacement") or not record.get("replacement"):
        record.update(deprecation=text["text"], replacement=text.get("replacement"))
    return record


# -- the history's maps -------------------------------------------------------------------------
def _flags(flags: dict, read, label: str, last: str) -> dict:
    folded = {}
    for name in sorted(set(flags) | set(read.options)):
        record = extend(flags.get(name), name in read.options, label, last)
        if name not in flags:
            record.update(deprecated=None, deprecation=None, replacement=None)
        folded[name] = said(record, read.deprecations.get(name), label)
    return folded


def _members(members: dict, names, deprecated: dict, label: str, last: str | None) -> dict:
    """A domain's values (or a JSON option's keys): spans over the releases that read the domain."""
    folded = {}
    for name in sorted(set(members) | set(names)):
        folded[name] = said(extend(members.get(name), name in names, label, last), (deprecated or {}).get(name), label)
    return folded


def _last_within(history: FlagHistory, record: dict | None) -> str | None:
    """The newest release inside a span (a domain's `read`): its members' spans end there."""
    if not record:
        return None
    inside = _indexes(record, history._versions)
    return history.releases[max(inside)] if inside else None


def _values(history: FlagHistory, read, label: str) -> dict:
    domains, heads = history.values, read.values or {}
    last = history.releases[-1]
    folded = {}
    for option in sorted(set(domains) | set(heads)):
        record, head = copy.deepcopy(domains.get(option)) or {}, heads.get(option)
        record["read"] = extend(record.get("read"), head is not None, label, last)
        opened = extend(record.get("open"), bool(head and head.get("open")), label, last)
        if head is not None:
            record.update({k: head[k] for k in ("domain", "from", "where", "open_with", "model_dependent")})
            record.pop("fold", None)
            if head.get("fold"):
                record["fold"] = head["fold"]
            members = _members(
                record.get("values", {}),
                head["values"],
                head.get("deprecated"),
                label,
                _last_within(history, domains.get(option, {}).get("read")),
            )
        if opened:
            record["open"] = {**opened, "type": head["open"] if head and head.get("open") else opened["type"]}
        if head is not None:
            record.pop("values", None)
            record["values"] = members  # last, as build writes it
        folded[option] = record
    return folded


def _keys(history: FlagHistory, read, label: str) -> dict:
    domains, heads = history.keys, read.keys or {}
    last = history.releases[-1]
    folded = {}
    for option in sorted(set(domains) | set(heads)):
        record, head = copy.deepcopy(domains.get(option)) or {}, heads.get(option)
        if head is not None:
            record.update({"class": head["class"], "where": head["where"]})
        record["read"] = extend(record.get("read"), head is not None, label, last)
        record["closed"] = extend(record.get("closed"), bool(head and head["closed"]), label, last)
        if head is not None:
            record["keys"] = _members(
                record.get("keys", {}),
                head["keys"],
                head.get("deprecated"),
                label,
                _last_within(history, domains.get(option, {}).get("read")),
            )
        folded[option] = {k: record[k] for k in ("class", "where", "read", "closed", "keys")}
    return folded


def _args(history: FlagHistory, read, label: str, last: str) -> dict:
    """What each option takes after it: the head's spec extends its span (a head read without them,
    or an option it could not follow, ends every spec: the history cannot say for the head)."""
    heads = read.args or {}
    folded = {}
    for option in sorted(set(history.args) | set(heads)):
        specs = history.args.get(option, {})
        mine = heads.get(option)
        folded[option] = {
            spec: span
            for spec in sorted(set(specs) | ({mine} - {None, "unknown"}))
            if (span := extend(specs.get(spec), spec == mine, label, last))
        }
    return folded


def with_head(data: dict, read, label: str, about: dict | None = None) -> dict:
    """The history `data` (schema 1) with `read` appended as its newest release `label`; `about`
    (what the head is: commit, tree, words) is kept under `head`. Maps this fold does not know (added
    to the history later) are kept as they are: the head then shares the newest release's answers."""
    if not read.options:
        raise HeadError(
            "the head's sources gave no `vllm serve` options: " + ("; ".join(read.diagnostics[:3]) or "nothing read")
        )
    history = FlagHistory(data)
    if label in history.releases or Version(label) <= history._versions[-1]:
        raise HeadError(f"{label} does not sort after every release of the history ({history.releases[-1]})")
    last = history.releases[-1]
    folded = copy.deepcopy(data)
    folded["releases"] = [*history.releases, label]
    folded["flags"] = _flags(history.flags, read, label, last)
    syntax = data.get("syntax", {})
    folded["syntax"] = {
        name: extend(syntax.get(name), name in read.syntax, label, last)
        for name in sorted(set(syntax) | set(read.syntax))
    }
    aliases = {
        **data.get("aliases", {}),
        **{a: o for a, o in read.aliases.items() if a in read.options and o in read.options},
    }
    folded["aliases"] = dict(sorted(aliases.items()))
    folded["values"] = _values(history, read, label)
    folded["keys"] = _keys(history, read, label)
    if "args" in data or read.args:
        folded["args"] = _args(history, read, label, last)
    if read.diagnostics:
        folded["diagnostics"] = {**data.get("diagnostics", {}), label: list(read.diagnostics)}
    folded["head"] = {"label": label, "after": last, **(about or {})}
    return folded


# -- its words ----------------------------------------------------------------------------------
def head_of(history: FlagHistory) -> dict | None:
    """What the history's head is (`label`, `after`, `name`…); None: a history of releases only."""
    return history.data.get("head")


def head_words(history: FlagHistory, record: dict | None, shown: str, version: str, names: str = "") -> str | None:
    """Why `version` lacks something, when the head is the reason: the head removed it (asked about
    the head) or only the head has it (asked about a release). None: the history's own words apply
    (an option removed releases ago keeps vLLM's explanation)."""
    head = head_of(history)
    if not head or not record:
        return None
    name = head.get("name") or f"the head's sources ({head['label']})"
    within = f" {names} of" if names else ""
    if version == head["label"] and record.get("removed") == head["label"]:
        who = "this checkout" if head.get("kind") == "worktree" else "the change"
        return f"{shown} is not in{within} {name}: vLLM {head['after']} has it, {who} removes or renames it"
    if version != head["label"] and record.get("added") == head["label"]:
        return f"{shown} is new in{within} {name}: no vLLM release has it yet (the newest read is {head['after']})"
    return None
