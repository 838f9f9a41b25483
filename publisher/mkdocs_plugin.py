"""The `driftmatrix` mkdocs plugin: live status of each checked command in a docs build.

    plugins:
      - driftmatrix:
          matrix: https://example.org/driftmatrix/matrix.json   # or a path
          site: https://example.org/driftmatrix/                # links (default: beside matrix)

Under each fenced code block holding a command that matrix.json knows (matched by page path
and the command's first line), one line: how each current build did — "✓ stable vLLM 0.20.1
(parser) · ✗ nightly vLLM 0.32.0 (fails at parse: …)" — and the command's judgement for the
versions this page is written for, linking to the command's evidence page. A matrix.json that
cannot be read (unreachable, malformed) is one build warning with the reason, never a failed
build; a command the matrix does not know gets no line. Everything shown is escaped.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from mkdocs.config import config_options
from mkdocs.plugins import BasePlugin

# matrix.json text on one line (a newline would end the paragraph or the admonition), and inert in
# the docs build's log, which is a CI log
from driftmatrix.common.inert import one_line, terminal
from driftmatrix.extractor.markdown_blocks import code_blocks
from driftmatrix.publisher.escaping import md_escape
from driftmatrix.runner.outcomes.vocabulary import GOOD, STATUS_LINE_DEPTH, STATUS_LINE_ICONS

log = logging.getLogger("mkdocs.plugins.driftmatrix")
FETCH_TIMEOUT_S = 15.0
CAUSE_CHARS = 140


def read_matrix(where: str) -> dict:
    """matrix.json from a URL or a path; ValueError with the reason when it cannot be used."""
    try:
        if where.startswith(("http://", "https://")):
            import httpx

            response = httpx.get(where, timeout=FETCH_TIMEOUT_S, follow_redirects=True)
            response.raise_for_status()
            doc = response.json()
        else:
            doc = json.loads(Path(where).read_text(encoding="utf-8"))
    except Exception as err:  # noqa: BLE001 - any failure to read is the same warning
        raise ValueError(f"{type(err).__name__}: {err}") from None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("snippets"), dict)
        or not isinstance(doc.get("targets"), dict)
    ):
        raise ValueError("not a driftmatrix matrix.json (no `snippets`/`targets`)")
    return doc


def _first_line(command: str) -> str:
    return next((ln.strip() for ln in command.split("\n") if ln.strip()), "")


class DriftmatrixPlugin(BasePlugin):
    config_scheme = (
        ("matrix", config_options.Type(str, default="")),
        ("site", config_options.Type(str, default="")),
    )

    def on_config(self, config):
        self.matrix: dict | None = None
        where = self.config["matrix"]
        if not where:
            log.warning("driftmatrix: no `matrix:` configured; no status lines")
            return config
        try:
            self.matrix = read_matrix(where)
        except ValueError as err:
            log.warning(
                f"driftmatrix: cannot use matrix.json from {where} ({terminal(err)}); the docs build without "
                "status lines"
            )
            return config
        self.site = (self.config["site"] or where.rsplit("/", 1)[0]).rstrip("/")
        self.attr_list = "attr_list" in config["markdown_extensions"]
        self.by_page: dict[str, list[tuple[str, dict, dict]]] = {}
        skipped = 0
        for sid, entry in self.matrix["snippets"].items():
            sources = entry.get("sources") if isinstance(entry, dict) else None
            if not isinstance(sources, list) or not isinstance(entry.get("support", {}), dict):
                skipped += 1
                continue
            for src in sources:
                if isinstance(src, dict) and isinstance(src.get("file"), str):
                    self.by_page.setdefault(src["file"].removeprefix("docs/"), []).append((str(sid), entry, src))
        if skipped:
            log.warning(f"driftmatrix: {skipped} malformed command entr(y/ies) in {where}; no status line for them")
        return config

    def on_page_markdown(self, markdown, page, config, files):
        if not self.matrix:
            return markdown
        wanted = self.by_page.get(PurePosixPath(page.file.src_uri).as_posix(), [])
        if not wanted:
            return markdown
        lines = markdown.split("\n")
        after: dict[int, list[str]] = {}
        for block in code_blocks(markdown):
            close = block.line + block.text.count("\n")
            if block.unclosed or close - 1 >= len(lines):
                continue
            opening = lines[block.line - 2]
            indent = opening[: len(opening) - len(opening.lstrip())]
            seen = set()
            block_lines = {ln.strip() for ln in block.text.split("\n")}
            for sid, entry, src in wanted:
                first = str(src.get("first_line") or _first_line(str(entry.get("command") or "")))
                if sid in seen or not first or first not in block_lines:  # a whole line, not a prefix
                    continue
                seen.add(sid)
                try:
                    status = self.status(sid, entry, src)
                except (AttributeError, TypeError, KeyError, ValueError) as err:
                    log.warning(
                        f"driftmatrix: {terminal(sid)}: malformed entry in matrix.json ({terminal(err)}); "
                        "no status line"
                    )
                    continue
                after.setdefault(close, []).append([indent + ln for ln in status])
        out = []
        for n, ln in enumerate(lines, 1):
            out.append(ln)
            for status in after.get(n, []):
                out += ["", *status]
        return "\n".join(out)

    def status(self, sid: str, entry: dict, src: dict) -> list[str]:
        """The status paragraph's lines (its class on a line of its own, as attr_list wants)."""
        parts = []
        for key, cell in entry.get("support", {}).items():
            target = self.matrix["targets"].get(key, {})
            if cell.get("retired") or target.get("retired"):
                continue
            status = cell.get("status")
            what = (
                STATUS_LINE_DEPTH.get(cell.get("stage"), cell.get("stage"))
                if status in GOOD
                else f"fails at {cell.get('stage')}"
                if status == "FAIL"
                else str(status).lower()
            )
            if status == "FAIL" and cell.get("notes"):
                cause = str(
                    cell["notes"][-1] if len(cell["notes"]) > 1 and "vLLM" in cell["notes"][-1] else cell["notes"][0]
                )  # the option history's words when it has them
                what = f"{what}: {cause[:CAUSE_CHARS]}{'…' if len(cause) > CAUSE_CHARS else ''}"
            parts.append(
                f"{STATUS_LINE_ICONS.get(status, '?')} vLLM {target.get('version', '?')} {target.get('name', key)} ({what})"
            )
        judged = one_line(src.get("judgement") or entry.get("judgement") or "not judged")
        text = one_line(" · ".join(parts) or "not run yet")
        link = f"{self.site}/snippets/{quote(sid, safe='')}.html"
        spec = one_line(src.get("written_for") or "any version")
        line = (
            f"driftmatrix: {md_escape(text)} · this page ({md_escape(spec)}): {md_escape(judged)} · [evidence]({link})"
        )
        return [line, "{: .driftmatrix-status }"] if self.attr_list else [line]
