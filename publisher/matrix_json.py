"""`matrix.json` (schema 1), in the spirit of MDN's browser-compat-data: per snippet, per
target, a `status`, how deep it went and its evidence link; per snippet its judgement against
the versions its pages are written for, the first/last vLLM version seen passing, and
`flags_valid`: the releases on which all its options exist (from the per-release option history).
Retired builds (superseded by a newer build of the same target) are kept, marked `retired`,
for the history. Documented for readers in docs/matrix-json.md (keep the two in step)."""

from __future__ import annotations

from datetime import UTC, datetime

from driftmatrix.publisher import verdict_words
from driftmatrix.publisher.addresses import evidence_href
from driftmatrix.publisher.command_view import CommandView, CommandViews
from driftmatrix.publisher.judgement import UNRECORDED, Judgement
from driftmatrix.publisher.public import http_url
from driftmatrix.publisher.results import Results
from driftmatrix.runner.outcomes import subcommands

SCHEMA = 1


def _target(results: Results, c, retired: bool) -> dict:
    entry = {
        "label": c.label,
        "kind": c.kind,
        "name": c.name,
        "version": c.version,
        "commit": c.commit,
        "distribution": c.distribution,
        "date": results.dates.get(c.key, ""),
    }
    if retired:
        newer = next((n for n in results.columns if n.name == c.name), None)
        entry.update(retired=True, superseded_by=newer.key if newer else None)
    return entry


def _support(v: CommandView, c, retired: bool) -> dict:
    o, found = v.outcomes[c.key], v.ranges[c.key]
    cell = {
        "status": o.verdict,
        "stage": o.stage,
        "depth": verdict_words.depth_text(o, v.snippet),
        "tier": o.tier,
        "stand_in": o.stand_in,
        "range": found.as_json() if found else None,
        "notes": v.notes[c.key],
        "evidence": evidence_href(v.id, c.key),
    }
    if retired:
        cell["retired"] = True
    return cell


def _judgement(j: Judgement) -> dict:
    return {
        "written_for": j.written_for.spec,
        "origin": j.written_for.origin,
        "basis": j.written_for.basis,
        "judgement": j.kind,
        "depth": j.depth,
        "works_from": j.works_from,
        "summary": j.summary,
        "failing": [k.column.key for k in j.failing],
        "regression": [k.column.key for k in j.regression] if j.regression else None,
        "decided_by": j.decided_by,
        "evidence": j.evidence,
        "defects": [{"code": d.code, "line": d.line, "message": d.message} for d in j.defects],
        "history_release": j.history_release,
        "history_why": j.history_why,
    }


def build(commands: CommandViews, generated: str | None = None) -> dict:
    """matrix.json from the commands' views."""
    results = commands.results
    generated = generated or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    builds = [*((c, False) for c in results.columns), *((c, True) for c in results.retired)]
    doc: dict = {
        "schema": SCHEMA,
        "generated": generated,
        "targets": {c.key: _target(results, c, retired) for c, retired in builds},
        "snippets": {v.id: _entry(v, builds) for v in commands},
    }
    return doc


def _entry(v: CommandView, builds: list) -> dict:
    s = v.snippet
    return {
        "kind": s.kind,
        "subcommand": subcommands.words(s),
        "command": v.command,
        "model": s.model,
        "speculative": bool(s.speculative_config),
        "runnable": s.runnable,
        "reason": s.reason,
        "judgement": v.worst.kind,
        "depth": v.worst.depth,
        "judgements": [_judgement(j) for j in v.judgements],
        "sources": [
            {
                "corpus": src.corpus,
                "version": src.version,
                "file": src.file,
                "line": src.line,
                "first_line": next((ln.strip() for ln in src.text.split("\n") if ln.strip()), ""),
                "url": http_url(src.url),
                "written_for": (src.written_for or UNRECORDED).spec,
                "judgement": j.kind,
            }
            for src, j in zip(s.sources, v.at_sources)
        ],
        "support": {c.key: _support(v, c, retired) for c, retired in builds if c.key in v.outcomes},
        "flags_valid": v.flags,
        "version_added": v.seen.first_passing["version"] if v.seen.first_passing else None,
        "version_removed": v.seen.version_removed,
        "first_passing": v.seen.first_passing,
        "last_passing": v.seen.last_passing,
    }
