"""Split documented shell text into words and operators, the way bash would read it.

Why not `shlex`: it has no ANSI-C `$'...'` quoting (used in the vLLM docs around
multi-line JSON), it cannot tell `$VAR` in double quotes (a placeholder) from `$VAR`
in single quotes (literal text), it treats `#` inside a word as a comment, and it has
no notion of a `\\` followed by trailing spaces (which bash does *not* treat as a line
continuation). Docs are read leniently — the command the author meant is kept — and
every place where bash would read it differently becomes a `Lint`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from driftmatrix.extractor.placeholder_text import LETTER
from driftmatrix.extractor.snippet_record import Lint

# Operators that end a simple command.
CONTROL_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")", "\n")
# Redirection operators; the word after one is its target, not an argument.
REDIRECTIONS = ("<<-", "<<<", "<<", ">>", "&>>", "&>", ">&", "<&", ">|", "<>", ">", "<")

# `<MODEL>`, `<...>` (an elided value), `{your model dir}`.
_PLACEHOLDER = re.compile(
    rf"<(?:{LETTER}[^<>\n=]{{0,80}}?|\.\.\.|…)>|\{{(?:{LETTER}|_)[^{{}}\n\"':,]{{0,80}}\}}"
)  # `<你的模型路径>` too: a letter of any script (extractor/placeholder_text.py)
_PLAIN = re.compile(r"[^ \t\r\n\\'\"$`<>;&|()]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL_PARAM = re.compile(r"[0-9@*#?$!-]")
_BACKSLASH_BLANKS = re.compile(r"\\[ \t]+(#[^\n]*)?(?=\n|$)")
_ANSI_C_CODE = re.compile(r"x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})")
_HEREDOC_DELIMITER = re.compile(r"[ \t]*(['\"]?)([A-Za-z_0-9]+)\1")
_ANSI_C_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


@dataclass
class Word:
    """One shell word after quote removal."""

    text: str
    """The word's value as bash would pass it (quotes removed, escapes decoded);
    expansions are kept verbatim (we never run a shell, so `$X` stays `$X`)."""
    line: int
    """0-based line (within the lexed text) where the word starts."""
    expansions: list[str] = field(default_factory=list)
    """Parameter/command expansions bash would perform in this word: `$VAR`,
    `${VAR}`, `$(cmd)`, backquotes. Empty for literal words."""
    quoted: bool = False
    """True when any part of the word was quoted."""


@dataclass
class Operator:
    """A control operator (`&&`, `|`, newline, ...) or a redirection (`>`, `2>&1`)."""

    op: str
    line: int
    redirection: bool = False


Token = Word | Operator


@dataclass
class LexResult:
    tokens: list[Token]
    lints: list[Lint]
    """Places where bash reads the text differently from what the author meant."""
    unterminated: str | None = None
    """Description of an unbalanced quote/expansion, when the text ends inside one."""
    heredocs: list[tuple[int, str]] = field(default_factory=list)
    """(0-based first line, body) of each here-document: data, e.g. a manifest for kubectl."""


class _Lexer:
    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.line = 0
        self.tokens: list[Token] = []
        self.lints: list[Lint] = []
        self.unterminated: str | None = None
        self.heredocs: list[tuple[str, bool]] = []  # pending: (delimiter, strip_tabs)
        self.bodies: list[tuple[int, str]] = []
        # current word under construction
        self.buf: list[str] | None = None
        self.word_line = 0
        self.expansions: list[str] = []
        self.quoted = False

    # -- word assembly -------------------------------------------------------------
    def _start(self) -> None:
        if self.buf is None:
            self.buf, self.word_line, self.expansions, self.quoted = [], self.line, [], False

    def _end(self) -> None:
        if self.buf is not None:
            self.tokens.append(Word("".join(self.buf), self.word_line, self.expansions, self.quoted))
            self.buf = None

    def _unbalanced(self, what: str, line: int) -> None:
        if self.unterminated is None:
            self.unterminated = f"{what} opened on line {line + 1} is never closed"
            self._lint("unbalanced-quote", f"{self.unterminated}: bash would wait for more input", line)

    def _lint(self, code: str, message: str, line: int | None = None) -> None:
        self.lints.append(Lint(code=code, message=message, line=self.line if line is None else line))

    # -- main loop ----------------------------------------------------------------
    def run(self) -> LexResult:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r":
                self._end()
                self.i += 1
            elif c == "\n":
                self._end()
                self._newline_operator()
            elif c == "\\":
                self._backslash()
            elif c == "#" and self.buf is None:
                self._comment()
            elif c == "'":
                self._start()
                self.quoted = True
                self._single_quoted()
            elif c == '"':
                self._start()
                self.quoted = True
                self._double_quoted()
            elif c == "$":
                self._dollar()
            elif c == "`":
                self._start()
                self._backquote()
            elif (c == "<" or (c == "{" and self.buf is None)) and (m := _PLACEHOLDER.match(s, self.i)):
                # `<MODEL>` / `<...>` / `{your model dir}` are documentation placeholders, read as
                # one word (bash would redirect or split them).
                self._start()
                self.buf.append(m.group(0))
                self.line += m.group(0).count("\n")
                self.i = m.end()
            elif c in "<>" or (c == "&" and s.startswith("&>", self.i)):
                self._redirection()
            elif c in ";&|()":
                self._end()
                op = next(o for o in CONTROL_OPERATORS if s.startswith(o, self.i))
                self.tokens.append(Operator(op, self.line))
                self.i += len(op)
            else:
                # A run of ordinary characters at once (`#` and `{` are ordinary mid-word).
                self._start()
                m = _PLAIN.match(s, self.i)
                self.buf.append(m.group(0) if m else c)
                self.i = m.end() if m else self.i + 1
        self._end()
        return LexResult(self.tokens, self.lints, self.unterminated, self.bodies)

    def _newline_operator(self) -> None:
        self.tokens.append(Operator("\n", self.line))
        self.i += 1
        self.line += 1
        if self.heredocs:
            self._skip_heredoc_bodies()

    def _skip_heredoc_bodies(self) -> None:
        # Heredoc bodies are data (a config file written with `cat <<EOF`), not commands.
        for delimiter, strip_tabs in self.heredocs:
            first, body = self.line, []
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                body_line = self.s[self.i : end]
                self.i = min(end + 1, len(self.s))
                self.line += 1
                if (body_line.lstrip("\t") if strip_tabs else body_line).strip() == delimiter:
                    break
                body.append(body_line)
            self.bodies.append((first, "\n".join(body)))
        self.heredocs = []

    def _backslash(self) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if nxt == "\n":  # a real line continuation
            self.i += 2
            self.line += 1
            return
        if nxt in " \t":
            # `\` + trailing blanks (+ maybe a comment) + newline: the author meant a
            # continuation; bash passes a ' ' argument and ends the command here.
            m = _BACKSLASH_BLANKS.match(s, i)
            if m:
                comment = m.group(1)
                what = "a comment" if comment else "trailing spaces"
                self._lint(
                    "backslash-not-continuation",
                    f"`\\` is followed by {what}, so bash does not continue the command on "
                    "the next line (it passes a ' ' argument and runs the next line as a new "
                    "command); the intended continuation was assumed",
                )
                self._end()
                self.i = m.end()
                if self.i < len(s):  # swallow the newline: continue the command
                    self.i += 1
                    self.line += 1
                return
        if nxt == "":
            self.i += 1
            return
        self._start()
        self.buf.append(nxt)
        self.quoted = True
        self.i += 2

    def _comment(self) -> None:
        end = self.s.find("\n", self.i)
        end = len(self.s) if end < 0 else end
        comment = self.s[self.i : end]
        self.i = end
        in_command = bool(self.tokens) and isinstance(self.tokens[-1], Word)
        if comment.rstrip().endswith("\\") and in_command and end < len(self.s):
            self._lint(
                "comment-hides-continuation",
                "the `\\` at the end of this line is inside a `#` comment, so bash ends the "
                "command here; the intended continuation was assumed",
            )
            self.i = end + 1
            self.line += 1

    def _single_quoted(self) -> None:
        start_line = self.line
        end = self.s.find("'", self.i + 1)
        if end < 0:
            self._unbalanced("an unbalanced single quote", start_line)
            end = len(self.s)
        chunk = self.s[self.i + 1 : end]
        self.buf.append(chunk)
        self.line += chunk.count("\n")
        self.i = end + 1

    def _double_quoted(self) -> None:
        start_line = self.line
        self.i += 1
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] == "\n":
                    self.line += 1
                else:
                    self.buf.append(s[self.i + 1])
                self.i += 2
            elif c == "$":
                self._dollar(in_double_quotes=True)
            elif c == "`":
                self._backquote()
            else:
                if c == "\n":
                    self.line += 1
                self.buf.append(c)
                self.i += 1
        self._unbalanced("an unbalanced double quote", start_line)

    def _ansi_c_quoted(self) -> None:
        # $'...' : backslash escapes are decoded, `\'` does not end the string.
        start_line = self.line
        self.i += 2
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "'":
                self.i += 1
                return
            if c == "\\" and self.i + 1 < len(s):
                e = s[self.i + 1]
                if e in _ANSI_C_ESCAPES:
                    self.buf.append(_ANSI_C_ESCAPES[e])
                    self.i += 2
                    continue
                m = _ANSI_C_CODE.match(s, self.i + 1)
                if m:
                    self.buf.append(chr(int(next(g for g in m.groups() if g), 8 if m.group(4) else 16)))
                    self.i = m.end()
                    continue
                self.buf.append(c)
                self.i += 1
                continue
            if c == "\n":
                self.line += 1
            self.buf.append(c)
            self.i += 1
        self._unbalanced("an unbalanced $'...' quote", start_line)

    def _dollar(self, in_double_quotes: bool = False) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if not in_double_quotes:
            self._start()
            if nxt == "'":
                self.quoted = True
                self._ansi_c_quoted()
                return
            if nxt == '"':  # $"..." (locale translation) reads like "..."
                self.quoted = True
                self.i += 1
                self._double_quoted()
                return
        if nxt == "(" or nxt == "{":
            close = ")" if nxt == "(" else "}"
            depth, j = 0, i + 1
            while j < len(s):
                if s[j] == nxt:
                    depth += 1
                elif s[j] == close:
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= len(s):
                self._unbalanced(f"an unbalanced ${nxt}", self.line)
            text = s[i : j + 1]
        else:
            m = _NAME.match(s, i + 1) or _SPECIAL_PARAM.match(s, i + 1)
            if not m:  # a lone `$` is literal
                self.buf.append("$")
                self.i += 1
                return
            text = s[i : m.end()]
        self.buf.append(text)
        self.expansions.append(text)
        self.line += text.count("\n")
        self.i += len(text)

    def _backquote(self) -> None:
        end = self.s.find("`", self.i + 1)
        if end < 0:
            self._unbalanced("an unbalanced backquote", self.line)
            end = len(self.s) - 1
        text = self.s[self.i : end + 1]
        self.buf.append(text)
        self.expansions.append(text)
        self.line += text.count("\n")
        self.i = end + 1

    def _redirection(self) -> None:
        # `2>&1`: a word made only of digits right before `<`/`>` is a file descriptor.
        if self.buf is not None and not self.quoted and "".join(self.buf).isdigit():
            self.buf = None
        self._end()
        op = next(o for o in REDIRECTIONS if self.s.startswith(o, self.i))
        self.i += len(op)
        self.tokens.append(Operator(op, self.line, redirection=True))
        if op in ("<<", "<<-"):
            m = _HEREDOC_DELIMITER.match(self.s, self.i)
            if m:
                self.heredocs.append((m.group(2), op == "<<-"))


def lex(text: str) -> LexResult:
    """Lex shell text into words and operators, with lints for misleading constructs."""
    return _Lexer(text).run()
