"""`matrix.json` (schema 1), in the spirit of MDN's browser-compat-data: per snippet, per
target, a `status` and its evidence link; per snippet the first/last vLLM version seen
passing. Documented for readers in docs/matrix-json.md (keep the two in step)."""

from __future__ import annotations

from datetime import datetime, timezone

from publisher import history as hist
from publisher.results import Results
from publisher.views import cause

SCHEMA = 1


def evidence_href(snippet_id: str, column_key: str) -> str:
    """Site-relative link to a cell's evidence (the snippet page, the target's section)."""
    return f"snippets/{snippet_id}.html#{column_key}"


def build(results: Results, snapshots: list[dict] | None = None, generated: str | None = None) -> dict:
    generated = generated or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc: dict = {
        "schema": SCHEMA,
        "generated": generated,
        "targets": {c.key: {"name": c.name, "version": c.version, "commit": c.commit,
                            "distribution": c.distribution, "date": results.dates.get(c.key, "")}
                    for c in results.columns},
        "snippets": {},
    }
    for s in results.snippets:
        support = {}
        for c in results.columns:
            o = results.cell(s.id, c)
            if o is None:
                continue
            notes = [n for n in [cause(o)] if n]
            if o.stand_in:
                notes.append("run with a random-weight stand-in of the model (same architecture)")
            support[c.key] = {"status": o.verdict, "stage": o.stage, "tier": o.tier, "stand_in": o.stand_in,
                              "notes": notes, "evidence": evidence_href(s.id, c.key)}
        doc["snippets"][s.id] = {
            "kind": s.kind, "model": s.model, "speculative": bool(s.speculative_config),
            "runnable": s.runnable, "reason": s.reason,
            "sources": [{"corpus": src.corpus, "version": src.version, "file": src.file, "line": src.line,
                         "url": src.url} for src in s.sources],
            "support": support,
        }
    seen = hist.seen(snapshots or [], doc)
    for sid, entry in doc["snippets"].items():
        s = seen.get(sid) or hist.Seen()
        entry["version_added"] = s.first_passing["version"] if s.first_passing else None
        entry["version_removed"] = s.version_removed
        entry["first_passing"], entry["last_passing"] = s.first_passing, s.last_passing
    return doc
