"""The generated pages of the site, as {path under docs/: Markdown text}.

Templates live in publisher/templates. Every value from docs or logs goes through jinja2's
autoescape (HTML blocks) or the `md`/`fence` filters (Markdown), never in raw: Markdown
passes raw HTML through, so a `<script>` in a log line would otherwise run. A page titled by
such a text sets its `title:` front matter with `front_matter` (the theme writes a page's title
unescaped into `<title>`, the header and the search index); a URL becomes a link only through
the `http` filter (http(s) only: a `javascript:` or `data:` URL is shown as text).
"""

from __future__ import annotations

import html
import json

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from driftmatrix.common.inert import one_line
from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.publisher import (
    addresses,
    causes,
    command_text,
    escaping,
    judgement,
    matrix_data,
    public,
    snippet_page,
    titles,
    verdict_words,
)
from driftmatrix.publisher.addresses import evidence_href
from driftmatrix.publisher.command_view import CommandView, CommandViews
from driftmatrix.publisher.judgement import Judgement
from driftmatrix.publisher.run_history import CHANGE_KINDS, Change
from driftmatrix.runner.outcomes import vocabulary
from driftmatrix.runner.outcomes.vocabulary import GOOD


def _short(value, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _legend() -> Markup:
    icon = vocabulary.ICONS
    items = "".join(
        f'<li><span class="dm-cell dm-{v}"><span aria-hidden="true">{icon[v]}</span> '
        f'<span class="dm-v">{v}</span></span> {html.escape(vocabulary.VERDICT_MEANING[v])}</li>'
        for v in vocabulary.VERDICTS
    )
    depths = " · ".join(
        f"<b>{html.escape(word)}</b> {html.escape(shown)}" for word, shown, _ in vocabulary.DEPTH.values()
    )
    judged = " · ".join(
        f'<span class="dm-j dm-j-{k}">{k}</span> {html.escape(vocabulary.JUDGEMENT_MEANING[k])}'
        for k in vocabulary.JUDGEMENTS
    )
    return Markup(
        f'<ul class="dm-legend">{items}<li><span class="dm-cell dm-none">· not run</span> not run on this build</li></ul>'
        f'<p class="dm-legend">How deep a {icon["PASS"]}/{icon["WARN"]} went: {depths}; '
        f"a {icon['FAIL']} names the stage it stopped at (<b>at config</b>).</p>"
        f'<p class="dm-legend">Versions: <b>0.21.0+</b> seen working on 0.21.0 and every newer version of that '
        f"kind of build; <b>0.18.0–0.19.1</b> only those; on a {icon['FAIL']} cell, <b>ok 0.21.0+</b> where it "
        f"did work; "
        f"<b>options 0.19.0+</b> the releases whose parser has all its options (the option history: for a "
        f"check that went no deeper than the parser). <i>older</i> / <i>newer</i> (dimmed, dotted): a build "
        f"outside the versions the page is written for.</p>"
        f'<p class="dm-legend">Judgement (against the versions each page is written for): {judged}</p>'
    )


def _front_matter(title: str) -> Markup:
    """The page's `title:` front matter: one line, inert (`one_line`: a bidi control shown `\\u202e`
    before the string is made, else YAML would read that escape back), HTML-escaped (the theme inserts
    it unescaped), as a YAML double-quoted string (JSON's string syntax is YAML's)."""
    return Markup(f"---\ntitle: {json.dumps(html.escape(one_line(title)), ensure_ascii=False)}\n---\n")


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader(__package__, "templates"),
        autoescape=select_autoescape(default=True),
        keep_trailing_newline=True,
    )
    env.filters["fence"] = lambda text, lang="": Markup(escaping.fence(str(text), lang))
    env.filters["md"] = lambda text: Markup(escaping.md_escape(" ".join(str(text).split())))  # a heading: one line
    env.filters["http"] = public.http_url
    env.filters["short"] = _short
    # One line of HTML: a blank line inside <pre> would end Markdown's raw-HTML block.
    env.filters["oneline"] = lambda text: Markup(html.escape(str(text)).replace("\n", "&#10;"))
    env.globals["legend"] = _legend
    env.globals["front_matter"] = _front_matter
    return env


def short_command(s: Snippet, limit: int = 110) -> str:
    text = " ".join(command_text.command(s).split())
    return text if len(text) <= limit else text[:limit] + "…"


def _cell(v: CommandView, col, j: Judgement | None = None) -> dict | None:
    o, s = v.outcomes.get(col.key), v.snippet
    if o is None:
        return None
    check = next((k for k in j.checks if k.column.key == col.key), None) if j else None
    outside = check is not None and check.scope in ("older", "newer")
    why = causes.cause(o, limit=160)
    tip = (
        f"{o.verdict} on {col.label}: {verdict_words.depth_text(o, s)}"
        + (f": {why}" if why else "")
        + (" (stand-in model)" if o.stand_in else "")
        + (f" — {check.scope} than the versions the page is written for" if outside else "")
    )
    return {
        "verdict": o.verdict,
        "icon": vocabulary.ICONS.get(o.verdict, "?"),
        "href": evidence_href(s.id, col.key),
        "tip": tip,
        "cause": causes.cause(o, limit=100),
        "depth": verdict_words.depth_word(o, s),
        "outside": outside,
    }


def _page_rows(commands: CommandViews) -> dict[str, dict]:
    """Every source page (all places, not only the first) with its snippets in line order."""
    pages: dict[str, dict] = {}
    columns = commands.results.columns
    for v in commands:
        s = v.snippet
        for src, j in zip(s.sources, v.at_sources):
            key = addresses.page_key(src)
            wf = judgement.written_for(src)
            p = pages.setdefault(
                key,
                {
                    "key": key,
                    "slug": addresses.page_slug(key),
                    "file": src.file,
                    "corpus": src.corpus,
                    "version": src.version,
                    "url": (src.url or "").split("#")[0] or None,
                    "written_for": wf,
                    "rows": [],
                    "name": titles.page_title(src),
                },
            )
            p["rows"].append(
                {
                    "id": s.id,
                    "line": src.line,
                    "url": src.url,
                    "short": short_command(s),
                    "judgement": j.kind,
                    "summary": j.summary,
                    "cells": [_cell(v, c, j) for c in columns],
                }
            )
    for p in pages.values():
        p["rows"].sort(key=lambda r: r["line"])
        kinds = list({r["id"]: r["judgement"] for r in p["rows"]}.values())  # a command shown twice counts once
        p.update(
            {k: kinds.count(k) for k in vocabulary.JUDGEMENTS},
            total=len(kinds),
            title=(f"{p['name']} — " if p["name"] != p["file"] else "") + f"{p['file']} ({p['corpus']} {p['version']})",
        )
    return pages


def _current(commands: CommandViews):
    """(build, command's view, its outcome there) for every cell of the current builds, build by build."""
    for c in commands.results.columns:
        for v in commands:
            if (o := v.outcomes.get(c.key)) is not None:
                yield c, v, o


def _verdict_counts(commands: CommandViews) -> dict[str, dict[str, int]]:
    """Per column: verdict -> commands, and `PASS parser` etc. for how deep the runs went."""
    counts = {c.key: {} for c in commands.results.columns}
    for c, _, o in _current(commands):
        counts[c.key][o.verdict] = counts[c.key].get(o.verdict, 0) + 1
        if o.verdict in GOOD:
            word = f"{o.verdict} {verdict_words.depth_word(o)}"
            counts[c.key][word] = counts[c.key].get(word, 0) + 1
    return counts


def _uncontained(commands: CommandViews) -> dict[str, int]:
    """Per build: how many of its outcomes ran the docs' code outside a sandbox (said on the overview)."""
    counts: dict[str, int] = {}
    for c, _, o in _current(commands):
        if snippet_page.contained(o).startswith("NOT"):
            counts[c.label] = counts.get(c.label, 0) + 1
    return counts


def render(
    commands: CommandViews,
    doc: dict,
    changes: list[Change],
    *,
    had_history: bool,
    annotated: dict | None = None,
    unsaved: dict | None = None,
) -> dict[str, str]:
    env = environment()
    results = commands.results
    pages = _page_rows(commands)
    ranked = sorted(pages.values(), key=lambda p: (-p["doc-drift"], -p["vllm-regression"], -p["needs-newer"], p["key"]))
    shorts = {s.id: short_command(s, 80) for s in results.snippets}
    judged = {k: sum(1 for v in commands if v.worst.kind == k) for k in vocabulary.JUDGEMENTS}
    common = {
        "columns": results.columns,
        "dates": results.dates,
        "verdicts": vocabulary.VERDICTS,
        "icons": vocabulary.ICONS,
        "judgements": vocabulary.JUDGEMENTS,
        "depth_words": [w for w, _, _ in vocabulary.DEPTH.values()],
    }
    out = {
        "index.md": env.get_template("index.md.j2").render(
            total=len(results.snippets),
            generated=doc["generated"],
            counts=_verdict_counts(commands),
            changes=changes,
            had_history=had_history,
            previous=(doc.get("previous") or ""),
            shorts=shorts,
            judged=judged,
            change_kinds=CHANGE_KINDS,
            retired=results.retired,
            offenders=[p for p in ranked if p["doc-drift"] or p["vllm-regression"]][:15],
            problems=results.problems,
            uncontained=_uncontained(commands),
            unchecked=results.unchecked,
            unsaved=unsaved,
            **common,
        ),
        "matrix.md": env.get_template("matrix.md.j2").render(total=len(results.snippets), **common),
        "matrix-data.js": matrix_data.script(matrix_data.build(commands)),
        "pages/index.md": env.get_template("pages_index.md.j2").render(pages=ranked, **common),
    }
    for p in pages.values():
        out[f"pages/{p['slug']}.md"] = env.get_template("page.md.j2").render(
            title=p["name"],
            corpus=p["corpus"],
            version=p["version"],
            file=p["file"],
            url=p["url"],
            written_for=p["written_for"],
            rows=p["rows"],
            **common,
        )
    for v in commands:
        out[f"snippets/{v.id}.md"] = snippet_page.render(env, commands, v)
    annotated = annotated or {}
    out["annotated/index.md"] = env.get_template("annotated_index.md.j2").render(
        pages=annotated.get("pages", []),
        had_docs=annotated.get("had_docs", False),
        problems=annotated.get("problems", []),
    )
    for p in annotated.get("pages", []):
        out[f"annotated/{p['slug']}.md"] = env.get_template("annotated_page.md.j2").render(**p)
    return out
