"""The history's values and JSON keys checked against a real build (issue 34).

For every value and key use the docs' commands make (driftmatrix.flaghistory.uses.uses_of: `--tool-call-parser
qwen3_xml`, `--speculative-config '{"method": "eagle3"}'` gives key `method` and value `eagle3`), the
build answers in its sandbox (runner/intarget/serve_values.py: the parser's choices, the registries'
own tables, the config classes' fields and whether they reject a key they lack) and the history
answers for the same version (FlagHistory.accepts_use). "Agree" = the same True/False; where the
history says None (not read, a placeholder, a plugin option that can add names, a key vLLM would
ignore) the use is listed apart, never counted either way. Beyond the docs, the full name sets of
every domain both know are compared.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from driftmatrix import runner
from driftmatrix.flaghistory.history import PLACEHOLDER, FlagHistory
from driftmatrix.flaghistory.uses import Use, uses_of
from driftmatrix.runner.builds.history_agreement import ask_in_target

SCRIPT = runner.INTARGET / "serve_values.py"


@dataclass(frozen=True)
class DocUse:
    """One value or key use, with the options of its command that can add names (`open_with`)."""

    use: Use
    opened: frozenset[str] = frozenset()


@dataclass
class ValueAgreement:
    version: str
    uses: int = 0
    agree: int = 0
    disagreements: list[dict] = field(default_factory=list)
    """{use, history, build, why}: the two answer True/False differently."""
    history_cannot_say: list[dict] = field(default_factory=list)
    """{use, build, why}: the history answers None."""
    build_cannot_say: list[dict] = field(default_factory=list)
    """{use, history, why}: the build's script could not answer (its `unknown`)."""
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    """value/key -> {uses, agree, disagree, history_none}."""
    domains: dict[str, dict] = field(default_factory=dict)
    """Per domain both know: {build, history, only_in_build, only_in_history}."""
    keys: dict[str, dict] = field(default_factory=dict)
    """Per JSON option both know: {class, only_in_build, only_in_history, closed: [history, build]}."""
    build_unknown: list[dict] = field(default_factory=list)
    """What the in-target script could not introspect, with why."""
    model_dependent: list[str] = field(default_factory=list)
    """Uses both call known whose working depends on the model (the domain's `model_dependent`): known
    to the build is all either side says of them."""

    def figures(self) -> dict[str, int]:
        return {
            "uses": self.uses,
            "agree": self.agree,
            "disagree": len(self.disagreements),
            "agree_known_but_model_dependent": len(self.model_dependent),
            "history_cannot_say": len(self.history_cannot_say),
            "build_cannot_say": len(self.build_cannot_say),
        }


def docs_uses(catalog, history: FlagHistory) -> list[DocUse]:
    """Every value and key use the catalog's commands make, once per (use, plugin options present)."""
    opening = {o for d in history.values.values() for o in d.get("open_with") or ()}
    found: dict[DocUse, None] = {}
    for snippet in catalog.snippets:
        argv = snippet.argv or []
        uses = uses_of(history, argv)
        options = frozenset(u.option for u in uses if u.kind == "option")
        for use in uses:
            if use.kind in ("value", "key"):
                found.setdefault(DocUse(use, options & opening))
    return sorted(found, key=lambda d: (d.use.kind, d.use.option, d.use.key or "", d.use.value or "", sorted(d.opened)))


def query_of(uses: list[DocUse]) -> dict:
    distinct = dict.fromkeys(d.use for d in uses)
    return {"uses": [{"kind": u.kind, "option": u.option, "key": u.key, "value": u.value} for u in distinct]}


def ask_build(python: str, uses: list[DocUse], env: dict | None = None) -> dict:
    """The real build's answers (serve_values.py's JSON); the docs' values go in as JSON data."""
    return ask_in_target(python, SCRIPT, query_of(uses), env)


def why_none(history: FlagHistory, doc: DocUse, version: str) -> str:
    """Why the history answers None for this use."""
    use, release = doc.use, history.release_for(version)
    if release is None:
        return f"no release read for {version}"
    if use.option.startswith("-") and not use.option.startswith("--"):
        return f"{use.option} is a short alias: the history does not say which option it stands for"
    if not history.accepts(use.option, release):
        return f"{use.option} is not an option of {release}"
    if use.kind == "key":
        domain = history.keys.get(use.option)
        if not domain or not history.within(domain.get("read"), release):
            return "keys not read for this release"
        return "not a known key, and vLLM ignores keys it lacks here (not `closed`)"
    domain = history.values.get(use.domain)
    if not domain or not history.within(domain.get("read"), release):
        return "values not read for this release"
    if PLACEHOLDER.search(use.value or ""):
        return "a placeholder"
    if doc.opened & set(domain.get("open_with") or ()):
        return f"unknown name with {', '.join(sorted(doc.opened))} in the command (plugins can add names)"
    if history.within(domain.get("open"), release):
        return f"an unknown name where the field's type admits any string ({domain['open']['type']})"
    return "unknown"


def _key(use: Use) -> tuple:
    return (use.kind, use.option, use.key, use.value)


def compare_values(history: FlagHistory, version: str, answers: dict, uses: list[DocUse]) -> ValueAgreement:
    result = ValueAgreement(version, build_unknown=list(answers.get("unknown", [])))
    build = {(a["kind"], a["option"], a.get("key"), a.get("value")): a for a in answers["answers"]}
    for doc in uses:
        ours = history.accepts_use(doc.use, version, doc.opened)
        theirs = build.get(_key(doc.use), {"build": None, "why": "not asked"})
        counts = result.by_kind.setdefault(doc.use.kind, {"uses": 0, "agree": 0, "disagree": 0, "history_none": 0})
        result.uses += 1
        counts["uses"] += 1
        entry = {"use": doc.use.text(), "kind": doc.use.kind, "domain": doc.use.domain}
        if ours is None:
            counts["history_none"] += 1
            result.history_cannot_say.append(
                {**entry, "build": theirs["build"], "why": why_none(history, doc, version)}
            )
        elif theirs["build"] is None:
            result.build_cannot_say.append({**entry, "history": ours, "why": theirs["why"]})
        elif ours == theirs["build"]:
            result.agree += 1
            counts["agree"] += 1
            if ours and doc.use.kind == "value" and (history.values.get(doc.use.domain) or {}).get("model_dependent"):
                result.model_dependent.append(doc.use.text())
        else:
            counts["disagree"] += 1
            result.disagreements.append({**entry, "history": ours, "build": theirs["build"], "why": theirs["why"]})
    release = history.release_for(version)
    if release is not None:
        _compare_sets(history, release, answers, result)
    return result


def _names_in(history: FlagHistory, record: dict, release: str, table: str) -> set[str]:
    return {n for n, span in record.get(table, {}).items() if history.within(span, release)}


def _fold(names, fold: str | None) -> set[str]:
    return {n.lower() for n in names} if fold else set(names)


def _compare_sets(history: FlagHistory, release: str, answers: dict, result: ValueAgreement) -> None:
    """The full name sets of every domain (and key set of every JSON option) both sides know."""
    for domain, record in sorted(history.values.items()):
        theirs = answers["domains"].get(domain)
        if theirs is None or not history.within(record.get("read"), release):
            continue
        fold = record.get("fold") or theirs.get("fold")  # compared case-blind where either side folds
        ours, build = _fold(_names_in(history, record, release, "values"), fold), _fold(theirs["names"], fold)
        result.domains[domain] = {
            "history": len(ours),
            "build": len(build),
            "from": [record.get("from"), theirs["from"]],
            "only_in_build": sorted(build - ours),
            "only_in_history": sorted(ours - build),
        }
    for option, record in sorted(history.keys.items()):
        theirs = answers["keys"].get(option)
        if theirs is None or not history.within(record.get("read"), release):
            continue
        ours, build = _names_in(history, record, release, "keys"), set(theirs["keys"])
        result.keys[option] = {
            "class": [record.get("class"), theirs["class"]],
            "closed": [history.within(record.get("closed"), release), theirs["closed"]],
            "only_in_build": sorted(build - ours),
            "only_in_history": sorted(ours - build),
        }


def as_json(result: ValueAgreement) -> dict:
    return asdict(result)
