"""Text from the docs and from vLLM, made inert in the Markdown that people read: the doc-fix PR
body, the GitHub step summaries, the docs gate's summary.

Why: a vLLM message repeats what the docs wrote. argparse's "invalid choice" quotes the value, so
`vllm serve m --dtype '@vllm-project/team ![](https://host/p.png) [fix](https://host)'` comes back
as a message that, written into a PR body as prose, pings a team, loads a tracking image and
shows a link, under the bot's name. GitHub renders these texts as GFM (cmark-gfm: raw HTML, links,
images, bare-URL autolinks) and then links @mentions, #references and bare URLs found in the
*text* of the rendered HTML — but nothing inside `<code>` or `<pre>`. Hence the rules:

- docs and vLLM text (commands, messages, reasons, notes, titles, file names) goes into a code
  span (`code_span`; `table_cell` in a GFM table) or a fenced block (`code_block`): there Markdown
  shows it as typed and GitHub links nothing, and the fence is built so that no text can end it;
- `plain` is for prose positions, for text driftmatrix mostly writes itself (target names, a
  runner choice): escaped and defused, in case some of it came from outside;
- a link is made only by the caller, from a URL driftmatrix built (its site, from its config).

Summaries are capped (`cap`, `STEP_SUMMARY_CAP`): GitHub refuses a step summary over 1 MiB.
"""

from __future__ import annotations

import html
import re

WORD_JOINER = "\u2060"
"""Zero-width and unbreakable. After an `@` or a `#`, inside `://` or `www.`, it keeps GitHub from
linking a mention, a reference or a bare URL in prose, and the text reads the same."""

STEP_SUMMARY_CAP = 900 * 1024
"""Bytes of Markdown that one step writes to `$GITHUB_STEP_SUMMARY` at most (common/step_summary.py
`write`, the docs gate's summary). GitHub refuses a step's summary over 1,024 KiB and then shows
none of it; 900 KiB leaves room for a line that says what was left out."""

_NEWLINES = re.compile(r"\r\n?")
_PROSE_SPECIAL = re.compile(r"([\\`*_\[\]|!~])")
"""What makes Markdown out of prose (code, emphasis, links, images, tables, strikethrough); `<`,
`>` and `&` are HTML-escaped instead (no tag, no autolink `<https://…>`, no entity)."""
_DEFUSE = re.compile(r"(?<=[@#])(?=\w)|(?<=:)(?=//)|(?i:(?<=\bwww)(?=\.)|(?<=\bgh-)(?=\d))")
"""Where a word joiner goes: `@user`, `#123`, `https://`, `www.`, `GH-123`."""
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")


def one_line(text: object) -> str:
    """Any text on one line, runs of whitespace as one space. A newline would end a table row, a
    list item or a heading, and one followed by a fence, `<details>` or `#` would start a new
    block even inside a code span (blocks are found before spans)."""
    return " ".join(str(text).split())


def clip(text: str, limit: int | None) -> str:
    """`text` of at most `limit` characters, a cut one ending in `…`."""
    return text if limit is None or len(text) <= limit else text[:max(0, limit - 1)] + "…"


def _longest_run(text: str, char: str = "`") -> int:
    return max((len(m) for m in re.findall(re.escape(char) + "+", text)), default=0)


def _span(body: str) -> str:
    if not body:
        return ""
    bar = "`" * (_longest_run(body) + 1)  # a span ends only at a run of exactly its own length
    pad = " " if body[0] == "`" or body[-1] == "`" else ""  # CommonMark strips one space each side
    return f"{bar}{pad}{body}{pad}{bar}"


def code_span(text: object, limit: int | None = None) -> str:
    """Any text as one inline code span, shown as typed (whitespace runs as one space): inside it
    no Markdown, no HTML and no GitHub mention, reference or autolink. Its backtick fence is longer
    than any run of backticks in the text, so the text cannot end it; a text starting or ending with
    a backtick is padded with a space, which CommonMark removes again. Empty text: empty string."""
    return _span(clip(one_line(text), limit))


def table_cell(text: object, limit: int | None = None) -> str:
    """`code_span` for a cell of a GFM table: a `|` would end the cell even inside a code span, so
    each is written `\\|`, which GFM turns back into `|` inside the span (cmark-gfm takes a pipe
    right after a backslash as escaped whatever precedes it, and drops only that backslash)."""
    return _span(clip(one_line(text), limit)).replace("|", "\\|")


def code_block(text: object, lang: str = "") -> str:
    """Any text (several lines) as a fenced code block that nothing inside can close: a fence ends
    only at a run of its own character at least as long, so it is longer than any run of that
    character in the text (at least three). Backticks, unless the text has a run of three or more
    and fewer tildes: then tildes, so that a log line of 500 backticks does not make a 500-character
    fence (a `~~~` line cannot close a backtick fence, nor the reverse). Line endings become `\\n`
    (a lone `\\r` ends a line for Markdown too). `lang`: driftmatrix's own info string (`bash`,
    `{ .bash .dm-command }`)."""
    body = _NEWLINES.sub("\n", str(text)).rstrip()
    ticks, tildes = _longest_run(body, "`"), _longest_run(body, "~")
    bar = "~" * max(3, tildes + 1) if ticks >= 3 and tildes < ticks else "`" * max(3, ticks + 1)
    return f"{bar}{one_line(lang).replace('`', '')}\n{body}\n{bar}"


def defuse(text: str) -> str:
    """`text` with a word joiner where GitHub would link a mention (`@team`), a reference (`#123`,
    `GH-123`) or a bare URL (`https://`, `www.`) in prose; code needs none of it."""
    return _DEFUSE.sub(WORD_JOINER, text)


def plain(text: object, limit: int | None = None) -> str:
    """Text for a prose position (a sentence, a table cell) where a code span would not read well:
    one line, clipped to `limit`, `<`, `>`, `&` HTML-escaped, the Markdown specials backslash-escaped
    (no link, image, emphasis, code or cell break), then `defuse`d. Quotes and other punctuation stay
    as typed. For docs and vLLM text prefer `code_span`: it shows the text exactly."""
    one = html.escape(clip(one_line(text), limit), quote=False)
    return defuse(_PROSE_SPECIAL.sub(r"\\\1", one))


def unclosed(lines: list[str]) -> list[str]:
    """The lines that close what a cut after `lines` left open: a code fence, `<details>` blocks.
    `<details>` counts only at the start of a line outside a fence, where driftmatrix writes it:
    docs and vLLM text never starts a line there (it is in a code span after `|` or `- `)."""
    bar, details = None, 0
    for line in lines:
        m = _FENCE.match(line)
        if bar is None and m:
            bar = m.group(1)
        elif bar is not None and m and m.group(1).startswith(bar) and not m.group(2).strip():
            bar = None  # a closing fence: the same character, at least as long, no info string
        elif bar is None:
            start = line.lstrip()
            details += start.startswith("<details") - start.startswith("</details>")
    return ([bar] if bar else []) + ["</details>"] * max(0, details)


def _left_out(count: int, where: str) -> str:
    return (f"{count:,} more row(s) left out: a step summary stops at {STEP_SUMMARY_CAP // 1024} KiB "
            f"(GitHub refuses one over 1 MiB). The full list: {where}.")


def cap(markdown: str, where: str, budget: int = STEP_SUMMARY_CAP) -> str:
    """`markdown` when it is at most `budget` bytes (UTF-8); else its first whole lines that fit —
    a table row or a list item is one line, every text in it being on one line — then what the cut
    left open closed, a blank line (a table or a list ends there) and a line saying how many rows
    were left out and where the full list is (`where`: driftmatrix's own words, shown as given).
    Empty when not even that line fits."""
    if len(markdown.encode()) <= budget:
        return markdown
    lines = markdown.split("\n")
    room = budget - len(_left_out(len(lines), where).encode()) - 256  # 256: closing lines, blank line
    kept, size = [], 0
    for line in lines:
        size += len(line.encode()) + 1
        if size > room:
            break
        kept.append(line)
    left = sum(1 for line in lines[len(kept):] if line.strip())
    out = "\n".join([*kept, *unclosed(kept), "", _left_out(left, where)]).lstrip("\n")
    return out if len(out.encode()) <= budget else ""
