"""One command's page (snippets/<id>.md): the command as the docs show it, where it appears,
its judgement, and per build the verdict with its evidence."""

from __future__ import annotations

import json

from jinja2 import Environment

from extractor.records import Snippet
from publisher import fixes, titles, views
from publisher.history import Seen
from publisher.judgement import Judge
from publisher.matrix_json import flags_valid
from publisher.results import Results


def render(env: Environment, results: Results, judge: Judge, s: Snippet, seen: Seen) -> str:
    rows = [(c, results.cell(s.id, c)) for c in results.columns if results.cell(s.id, c)]
    diffs = views.config_differences({c.key: o for c, o in rows})
    variants = []
    for v in results.variants(s.id):
        for c in results.columns:
            o = results.cell(s.id, c, v)
            if o:
                perf = views.perf_rows(o)
                variants.append({"variant": v, "label": c.label, "o": o, "cause": views.cause(o),
                                 "single": perf[0]["decode"] if perf else "", "many": perf[1]["throughput"] if len(perf) > 1 else ""})
    retired = [(c, o) for c in results.retired if (o := results.cell(s.id, c))]
    return env.get_template("snippet.md.j2").render(
        s=s, title=titles.snippet_title(s), command=views.command(s), flags=flags_valid(s),
        spec_json=json.dumps(s.speculative_config) if s.speculative_config else "",
        page_slugs=[views.page_slug(views.page_key(src)) for src in s.sources],
        judgements=judge.all(s), source_judgements=[judge.of_source(s, src).kind for src in s.sources],
        rows=rows, causes={c.key: views.cause(o) for c, o in rows}, depths={c.key: views.depth_text(o) for c, o in rows},
        locations={c.key: views.location(o.evidence.exception) for c, o in rows},
        option_notes={c.key: views.option_notes(o) for c, o in rows},
        perfs={c.key: views.perf_rows(o) for c, o in rows}, diffs=diffs,
        flipped=[k for k, vals in diffs.items() if all(isinstance(v, bool) for v in vals.values())],
        icons=views.ICONS, variants=variants, seen=seen, retired=retired,
        fix=results.fixes.get(s.id), fix_verified=fixes.verified(results, judge, s))
