"""`matrix.json` (schema 1), in the spirit of MDN's browser-compat-data: per snippet, per
target, a `status`, how deep it went and its evidence link; per snippet its judgement against
the versions its pages are written for, the first/last vLLM version seen passing, and
`flags_valid`: the releases on which all its options exist (from the per-release option history).
Retired builds (superseded by a newer build of the same target) are kept, marked `retired`,
for the history. Documented for readers in docs/matrix-json.md (keep the two in step)."""

from __future__ import annotations

from datetime import datetime, timezone

from flaghistory.commands import command_options, shipped
from publisher import run_history as hist
from publisher import ranges, views
from publisher.judgement import UNRECORDED, Judge, Judgement
from publisher.results import Results
from publisher.views import cause
from runner.outcomes import subcommands

SCHEMA = 1


def evidence_href(snippet_id: str, column_key: str) -> str:
    """Site-relative link to a cell's evidence (the snippet page, the target's section)."""
    return f"snippets/{snippet_id}.html#{column_key}"


def _target(results: Results, c, retired: bool) -> dict:
    entry = {"label": c.label, "kind": c.kind, "name": c.name, "version": c.version, "commit": c.commit,
             "distribution": c.distribution, "date": results.dates.get(c.key, "")}
    if retired:
        newer = next((n for n in results.columns if n.name == c.name), None)
        entry.update(retired=True, superseded_by=newer.key if newer else None)
    return entry


def _support(o, c, s, retired: bool, found: ranges.Range | None) -> dict:
    notes = [n for n in [cause(o)] if n] + views.option_notes(o, s) + views.placeholders_replaced(o)
    if views.documented_twin(o):
        notes.append("run with a random-weight stand-in of the model (same architecture)")
    cell = {"status": o.verdict, "stage": o.stage, "depth": views.depth_text(o, s), "tier": o.tier,
            "stand_in": o.stand_in, "range": found.as_json() if found else None, "notes": notes,
            "evidence": evidence_href(s.id, c.key)}
    if retired:
        cell["retired"] = True
    return cell


def _judgement(j: Judgement) -> dict:
    return {"written_for": j.written_for.spec, "origin": j.written_for.origin, "basis": j.written_for.basis,
            "judgement": j.kind, "depth": j.depth, "works_from": j.works_from, "summary": j.summary,
            "failing": [k.column.key for k in j.failing],
            "regression": [k.column.key for k in j.regression] if j.regression else None,
            "decided_by": j.decided_by, "defects": [{"code": d.code, "line": d.line, "message": d.message}
                                                     for d in j.defects],
            "history_release": j.history_release}


def flags_valid(s) -> dict | None:
    """The releases on which every option of the command exists (flaghistory); None: no options
    or no history, or a subcommand snippet (`vllm bench throughput …`: the history is `vllm serve`'s)."""
    if s.kind == "subcommand":
        return None
    history = shipped()
    found = command_options(history, s.argv or []) if history else None
    return found.as_json() if found else None


def build(results: Results, snapshots: list[dict] | None = None, generated: str | None = None,
          judge: Judge | None = None) -> dict:
    generated = generated or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    judge = judge or Judge(results)
    old = [(c, True) for c in results.retired]
    doc: dict = {
        "schema": SCHEMA,
        "generated": generated,
        "targets": {c.key: _target(results, c, retired) for c, retired in [*((c, False) for c in results.columns), *old]},
        "snippets": {},
    }
    known = ranges.runs(snapshots or [], results)
    for s in results.snippets:
        flags = flags_valid(s)
        support = {c.key: _support(o, c, s, retired, ranges.of_cell(known, s.id, o, flags))
                   for c, retired in [*((c, False) for c in results.columns), *old]
                   if (o := results.cell(s.id, c)) is not None}
        worst = judge.of(s)
        doc["snippets"][s.id] = {
            "kind": s.kind, "subcommand": subcommands.words(s), "command": views.command(s), "model": s.model,
            "speculative": bool(s.speculative_config),
            "runnable": s.runnable, "reason": s.reason,
            "judgement": worst.kind, "depth": worst.depth,
            "judgements": [_judgement(j) for j in judge.all(s)],
            "sources": [{"corpus": src.corpus, "version": src.version, "file": src.file, "line": src.line,
                         "first_line": next((ln.strip() for ln in src.text.split("\n") if ln.strip()), ""),
                         "url": views.http_url(src.url), "written_for": (src.written_for or UNRECORDED).spec,
                         "judgement": judge.of_source(s, src).kind} for src in s.sources],
            "support": support,
            "flags_valid": flags,
        }
    seen = hist.seen(snapshots or [], doc)
    for sid, entry in doc["snippets"].items():
        s = seen.get(sid) or hist.Seen()
        entry["version_added"] = s.first_passing["version"] if s.first_passing else None
        entry["version_removed"] = s.version_removed
        entry["first_passing"], entry["last_passing"] = s.first_passing, s.last_passing
    return doc
