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

The same texts are made inert where a terminal or a CI log reads them (`terminal`, and the stream
guard in common/inert_stdio.py), and every Markdown text above is first stripped of control
characters (`strip_controls`): an ESC sequence or a BEL from the docs or from vLLM neither
recolours, retitles or rewrites a terminal nor reaches a page, a PR body or a step summary.

`strip_controls` also shows the invisible format characters escaped, as Python's `ascii()` writes
them (`\\u202e`): the bidi controls (U+202A–U+202E, U+2066–U+2069, U+061C, U+200E, U+200F), which
make a line read in another order than it runs ("Trojan Source"), and the zero-width ones (U+200B–
U+200D, U+2060–U+2064, U+FEFF, the tag characters U+E0000–U+E007F), which make two different
commands, names or flags look the same. The rule is Unicode's whole category Cf, and the line and
paragraph separators U+2028 and U+2029 (a line break to some readers, none to others), with no
exception: ZWJ and ZWNJ (U+200D, U+200C) are needed in some scripts and emoji sequences, but these
texts are commands, flags, file names, headings and messages, where a visible `\\u200d` costs
little and a hidden one can pass one command off as another. Only driftmatrix's own word joiners
stay (`WORD_JOINER`, where `defuse` and `defuse_commands` put them: after `@`, between `:` and `:`,
…), so that the rules can be applied twice; one the docs wrote in such a place stays too, where it
is one driftmatrix would have put. Variation selectors and fillers (not format characters) are left
as they are.

GitHub Actions reads every line a step writes to stdout or stderr as a possible workflow command
(actions/runner, src/Runner.Common/ActionCommand.cs): `TryParseV2` trims leading whitespace
(.NET's `TrimStart`) and takes a line that then starts with `::` as `::name props::data`, and the
legacy `TryParse` finds `##[name props]data` *anywhere* in the line (`IndexOf`); the runner splits
its input into lines at `\\n` and `\\r`. A registered name (`error`, `add-mask`, `stop-commands`,
`set-output`, …, compared ordinally, case-blind) makes it a command. So indentation alone does not
defuse a `::` line, and a `##[error]` in the middle of a message is a command too. The rule here
(`defuse_commands`): a word joiner between the two colons of a line's leading `::` and between
`##` and `[` wherever they meet. It reads the same, and it holds however the runner compares: no
line starts with `::` or holds `##[` any more, and were a joiner skipped as ignorable, the name the
runner cuts out at a fixed offset would start with `:` or `[`, which no command has.
"""

from __future__ import annotations

import html
import json
import re

WORD_JOINER = "\u2060"
"""Zero-width and unbreakable. After an `@` or a `#`, inside `://` or `www.`, it keeps GitHub from
linking a mention, a reference or a bare URL in prose, and the text reads the same; between `:`
and `:` or `##` and `[` it keeps the Actions runner from reading a line as a workflow command. It
is not whitespace to .NET (`TrimStart` keeps it) nor to Python."""

STEP_SUMMARY_CAP = 900 * 1024
"""Bytes of Markdown that one step writes to `$GITHUB_STEP_SUMMARY` at most (common/step_summary.py
`write`, the docs gate's summary). GitHub refuses a step's summary over 1,024 KiB and then shows
none of it; 900 KiB leaves room for a line that says what was left out."""

_NEWLINES = re.compile(r"\r\n?")
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI (ECMA-48): colours, cursor moves, erasing
    r"|[\x1b][\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC (titles, links), DCS, SOS, PM, APC
    r"|\x1b[ -/]*[0-~]?"  # the other escape sequences (charset switches, `ESC c`: reset)
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # CSI as its one C1 byte
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
)  # the C1 string controls
"""An escape sequence with what belongs to it (a colour's `[31m`, a title's text): stripped whole,
so that no stray parameters are shown. A string control ends at its terminator or the line's end
(a terminal would swallow the lines after an unterminated one; here they stay)."""
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 but tab and newline, DEL, C1: what a terminal acts on instead of showing."""
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
"""Unicode's format characters (category Cf, as of Unicode 15: bidi controls, zero-width spaces and
joiners, invisible operators, tags, …) and the line and paragraph separators (Zl, Zp): shown
escaped by `strip_controls` (tests/common/test_inert.py holds this list against Python's
`unicodedata`)."""
_OWN_JOINER = re.compile(
    r"(?<=#)\u2060(?=\[)|(?<=:)\u2060(?=:|//)|(?<=[@#])\u2060(?=\w)|(?i:(?<=\bwww)\u2060(?=\.)|(?<=\bgh-)\u2060(?=\d))"
)
"""A word joiner where `defuse` or `defuse_commands` puts one: between `:` and `:` or `#` and `[` (not
only at a line's start, nor only after `##`: rich may wrap or fold a line there), after `@` or `#`,
inside `://`, `www.` and `GH-1`."""
_LINE_COMMAND = re.compile(r"^([^\S\n]*:)(?=:)", re.MULTILINE)
"""A line's leading `::` after any whitespace (Python's whitespace is a superset of .NET's
`char.IsWhiteSpace`, which `TrimStart` trims)."""
_LEGACY_COMMAND = re.compile(r"##(?=\[)")
_PROSE_SPECIAL = re.compile(r"([\\`*_\[\]|!~])")
"""What makes Markdown out of prose (code, emphasis, links, images, tables, strikethrough); `<`,
`>` and `&` are HTML-escaped instead (no tag, no autolink `<https://…>`, no entity)."""
_DEFUSE = re.compile(r"(?<=[@#])(?=\w)|(?<=:)(?=//)|(?i:(?<=\bwww)(?=\.)|(?<=\bgh-)(?=\d))")
"""Where a word joiner goes: `@user`, `#123`, `https://`, `www.`, `GH-123`."""
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")


def strip_controls(text: object, before: str = "") -> str:
    """`text` without escape sequences (CSI, OSC, …, in their ESC and C1 forms), without the other
    C0 and C1 control characters and DEL; `\\r\\n` and a lone `\\r` become `\\n` (a lone `\\r`
    ends a line for the Actions runner and for Markdown, and lets a terminal overwrite one); tabs
    and newlines stay; format characters shown escaped (`shown_invisible`; `before`: its context).
    For every text from the docs or from vLLM, wherever it is shown. Idempotent."""
    return shown_invisible(_CONTROLS.sub("", _ESCAPES.sub("", _NEWLINES.sub("\n", str(text)))), before)


def _escaped_char(char: str) -> str:
    return ascii(char)[1:-1]  # `\\u202e`, `\\U000e0041`, `\\xad`


def shown_invisible(text: str, before: str = "") -> str:
    """`text` with every format character (bidi control, zero-width character: `_INVISIBLE`) written
    as Python's `ascii()` writes it, `\\u202e`: seen, and acting on nothing. driftmatrix's own word
    joiners stay (`_OWN_JOINER`); `before`: the inert text written right before `text` (a stream's
    last characters), which decides a joiner at its start."""
    if not _INVISIBLE.search(text):
        return text
    own = set()
    if WORD_JOINER in text:
        whole = before[-4:] + text  # the longest look-behind: `\bwww`
        own = {m.start() - (len(whole) - len(text)) for m in _OWN_JOINER.finditer(whole)}
    return _INVISIBLE.sub(lambda m: m[0] if m.start() in own else _escaped_char(m[0]), text)


def json_text(text: str) -> str:
    """JSON text (`json.dumps`, `ensure_ascii=False`) with every format character written as its
    JSON escape (`\\u202e`; astral ones as a surrogate pair): the same data, no invisible character
    in the file. Outside its strings JSON has none to escape."""
    return _INVISIBLE.sub(lambda m: json.dumps(m[0]).strip('"'), text)


def strip_controls_in(value: object) -> object:
    """A JSON-like value with `strip_controls` applied to every string in it, keys too: data that a
    page shows as text (JSON would only escape an ESC, and the browser would put it back)."""
    if isinstance(value, str):
        return strip_controls(value)
    if isinstance(value, dict):
        return {strip_controls_in(k): strip_controls_in(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strip_controls_in(v) for v in value]
    return value


def defuse_commands(text: str, written: int = 0) -> str:
    """`text` that no line of which the Actions runner takes for a workflow command: a word joiner
    between the colons of a line's leading `::` and between `##` and `[` anywhere (the module's
    docstring says why there). Idempotent. `written`: the first `written` characters of `text`
    are already out (a stream's line so far): only the rest is returned. A joiner always goes
    right before the character that completes `::` or `##[`, so none is ever owed to what is out."""
    joins = sorted({m.end() for m in _LINE_COMMAND.finditer(text)} | {m.end() for m in _LEGACY_COMMAND.finditer(text)})
    out, at = [], written
    for pos in (p for p in joins if p >= written):
        out += [text[at:pos], WORD_JOINER]
        at = pos
    return "".join(out) + text[at:]


def terminal(text: object) -> str:
    """Docs or vLLM text for stdout or stderr (a terminal, a CI log): `strip_controls`, then
    `defuse_commands`. Lines stay lines. In a rich console string: `console_markup`."""
    return defuse_commands(strip_controls(text))


def console_markup(text: object) -> str:
    """`terminal` text for a rich console string, its `[…]` escaped: a `[bold]` or a
    `[link=https://…]` from the docs is shown as typed, never styles or links (or raises)."""
    from rich.markup import escape  # rich only where a console prints

    return escape(terminal(text))


def log_json(value: object, **dumps) -> str:
    """`value` as JSON for stdout: ASCII (every control character escaped) and `##[` written
    `##\\u005b`, the same JSON data, which no runner reads as a legacy workflow command (outside
    a string JSON has no `#`; no JSON line starts with `::`)."""
    return json.dumps(value, ensure_ascii=True, **dumps).replace("##[", "##\\u005b")


_DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY_ESCAPES = (*_DATA_ESCAPES, (":", "%3A"), (",", "%2C"))


def _escaped(text: str, escapes) -> str:
    for char, code in escapes:  # `%` first: the runner unescapes it last
        text = text.replace(char, code)
    return text


def workflow_command(command: str, message: object = "", **properties: object) -> str:
    """One of driftmatrix's own workflow commands (`::error file=x,line=3::message`), escaped as
    the runner unescapes (ActionCommand.cs: data `%`, CR, LF; properties also `:` and `,`), so
    that a message from outside stays this command's data, one line. Print it with
    `driftmatrix.common.inert_stdio.emit`, which passes the stream guard."""
    props = ",".join(f"{k}={_escaped(strip_controls(v), _PROPERTY_ESCAPES)}" for k, v in properties.items())
    return f"::{command}{' ' + props if props else ''}::{_escaped(strip_controls(message), _DATA_ESCAPES)}"


def one_line(text: object) -> str:
    """Any text on one line, runs of whitespace as one space, control characters stripped. A
    newline would end a table row, a list item or a heading, and one followed by a fence,
    `<details>` or `#` would start a new block even inside a code span (blocks are found before
    spans)."""
    return " ".join(strip_controls(text).split())


def clip(text: str, limit: int | None) -> str:
    """`text` of at most `limit` characters, a cut one ending in `…`."""
    return text if limit is None or len(text) <= limit else text[: max(0, limit - 1)] + "…"


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
    `{ .bash .dm-command }`). Control characters are stripped (`strip_controls`)."""
    body = strip_controls(text).rstrip()
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
    return (
        f"{count:,} more row(s) left out: a step summary stops at {STEP_SUMMARY_CAP // 1024} KiB "
        f"(GitHub refuses one over 1 MiB). The full list: {where}."
    )


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
    left = sum(1 for line in lines[len(kept) :] if line.strip())
    out = "\n".join([*kept, *unclosed(kept), "", _left_out(left, where)]).lstrip("\n")
    return out if len(out.encode()) <= budget else ""
