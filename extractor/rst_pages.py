"""The snippets of a reStructuredText page (a Sphinx site's `.rst`), read with docutils' own parser.

Code is found where Sphinx shows it: `.. code-block:: LANG` (also `.. code::`, `.. sourcecode::`,
sphinx-prompt's `.. prompt:: LANG`), `.. parsed-literal::` (its inline markup and the page's own
`|substitutions|` rendered by docutils), literal blocks after `::` (in the language of the last
`.. highlight::`, else read as shell) and `.. literalinclude:: FILE` (read from the tree only, as an
`--8<--` include of a Markdown page is: a path leading out of it is a diagnostic). Each block goes to the
reader for its language (extractor/code_blocks.py), at the file line of its first content line.

Sphinx's own directives and roles (`.. toctree::`, `.. tab:: CPU`, `:ref:`) are not docutils': while a
page is parsed, one that docutils does not know is read as a container whose content is reST (so code in
a tab or a note is still found) or as plain text, the way Sphinx hooks its own in
(`sphinx.util.docutils.sphinx_domains`). Nothing a page says is executed: file insertion (`.. include::`)
and `.. raw::` are off; a broken page gives what docutils could read, never stops the extraction.

Anchors are the section ids docutils gives (the ids Sphinx renders, `auto_id_prefix` `id`, no document
title promoted); a page's title is its first section's title.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes, utils
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.directives.body import ParsedLiteral

from driftmatrix.extractor import bounds, written_for
from driftmatrix.extractor.code_blocks import snippets_from_block
from driftmatrix.extractor.file_text import read_text
from driftmatrix.extractor.markdown_blocks import title_from_file
from driftmatrix.extractor.snippet_builder import Place
from driftmatrix.extractor.snippet_record import Diagnostic, Snippet

_PAGE_HINTS = ("vllm", "speculative", "-sc ", "literalinclude")
_SUFFIX_LANGS = {".yaml": "yaml", ".yml": "yaml", ".py": "python", ".sh": "bash", ".bash": "bash"}
_LOCK = threading.Lock()
_MADE_UP_ID = re.compile(r"^id\d+$")
_INCLUDED = re.compile(r"^include:(.+):(\d+)(?: in .*)?$")


class _AnyOptions(dict):
    """An option spec that takes every option as text (Sphinx's `:caption:`, `:emphasize-lines:`, …)."""

    def __missing__(self, key: str):
        return directives.unchanged

    def __bool__(self) -> bool:  # docutils reads options only where a directive has a spec
        return True


class _Code(Directive):
    """`.. code-block:: LANG` and its aliases: the content, as written, in its language."""

    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()
    has_content = True

    def run(self) -> list[nodes.Node]:
        lang = self.arguments[0].split()[0].lower() if self.arguments else None
        node = nodes.literal_block("\n".join(self.content), "\n".join(self.content))
        node.line, node["rst_lang"], node["rst_directive"] = self.content_offset + 1, lang, self.name
        return [node]


class _ParsedLiteral(ParsedLiteral):
    """docutils' `.. parsed-literal::` (inline markup rendered), with any option."""

    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        found = super().run()
        found[0]["rst_directive"] = "parsed-literal"
        return found


class _LiteralInclude(Directive):
    """`.. literalinclude:: FILE`: only noted here (the file is read later, from the tree)."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        node = nodes.literal_block("", "")
        node.line, node["rst_include"] = self.lineno, self.arguments[0].strip()
        node["rst_lang"] = (self.options.get("language") or "").strip().lower() or None
        node["rst_options"] = {k: str(v) for k, v in self.options.items()}
        return [node]


class _Highlight(Directive):
    """`.. highlight:: LANG`: the language of the `::` blocks that follow."""

    required_arguments = 1
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        return [nodes.comment("", "", rst_highlight=self.arguments[0].strip().lower())]


class _Container(Directive):
    """A directive docutils does not know (Sphinx's, an extension's): its content read as reST."""

    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()
    has_content = True

    def run(self) -> list[nodes.Node]:
        node = nodes.container(rst_directive=self.name, rst_title=" ".join(self.arguments))
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


_OWN = {
    "code-block": _Code,
    "code": _Code,
    "sourcecode": _Code,
    "prompt": _Code,
    "parsed-literal": _ParsedLiteral,
    "literalinclude": _LiteralInclude,
    "highlight": _Highlight,
}


def _any_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """A role docutils does not know (`:ref:`, `:doc:`): its text, as text."""
    return [nodes.literal(rawtext, utils.unescape(text))], []


class _Lookups:
    """Sphinx's way in (`sphinx_domains`): docutils' directive and role look-ups, ours first and a
    permissive fallback for what neither knows, while one page is parsed."""

    def __enter__(self) -> None:
        _LOCK.acquire()
        self.directive, self.role = directives.directive, roles.role
        directives.directive, roles.role = self._directive, self._role

    def __exit__(self, *exc) -> None:
        directives.directive, roles.role = self.directive, self.role
        _LOCK.release()

    def _directive(self, name, language, document):
        if name.lower() in _OWN:
            return _OWN[name.lower()], []
        found, messages = self.directive(name, language, document)
        return found or _Container, messages

    def _role(self, name, language, lineno, reporter):
        found, messages = self.role(name, language, lineno, reporter)
        return found or _any_role, messages


_SETTINGS = {
    "report_level": 5,  # nothing reported
    "halt_level": 5,  # nothing stops the page
    "warning_stream": False,
    "file_insertion_enabled": False,  # `.. include::`, `:file:` options: never read a file here
    "raw_enabled": False,
    "syntax_highlight": "none",  # no Pygments: a language it does not know is no error
    "doctitle_xform": False,  # as Sphinx: the first section stays a section (its id, the anchor)
    "sectsubtitle_xform": False,
    "docinfo_xform": False,
    "auto_id_prefix": "id",  # as Sphinx: `id1`, not docutils' `section-1`
    "input_encoding": "unicode",
}


def parse(text: str, source: str = "<page>") -> nodes.document:
    """The page's doctree, as docutils reads it with Sphinx's settings: a problem (a broken directive, an
    unknown option) is never reported or raised, the rest of the page is still read."""
    with _Lookups():
        return publish_doctree(text, source_path=source, settings_overrides=_SETTINGS)


@dataclass
class RstBlock:
    """One block of code of a page, as Sphinx shows it."""

    lang: str | None
    """Its language (lower-cased); None where Sphinx shows a file in no language this reads."""
    text: str
    line: int
    """1-based file line of its first content line (of the directive, for a `literalinclude`)."""
    anchor: str | None
    """Id of the section it is in."""
    heading: str
    """Title of the section it is in."""
    context: str
    """`code-block:bash`, `literal:plain`, … and `in tab`, `in note` inside a directive."""
    include: str = ""
    """A `literalinclude`'s file, as written."""
    options: dict | None = None
    """A `literalinclude`'s options (`:lines:`, `:start-after:` …)."""


def blocks(document: nodes.document) -> Iterator[RstBlock]:
    """The code blocks of a page's doctree, in page order."""
    highlight = ""
    for node in document.findall(nodes.Element):
        if isinstance(node, nodes.comment) and node.get("rst_highlight"):
            highlight = node["rst_highlight"]
        elif isinstance(node, nodes.literal_block) and not _in_message(node):
            yield _block(node, highlight)


def _block(node: nodes.literal_block, highlight: str) -> RstBlock:
    section = _enclosing(node, nodes.section)
    kind = node.get("rst_directive") or ("literalinclude" if node.get("rst_include") else "literal")
    if kind == "literalinclude":
        lang = node.get("rst_lang")  # None: told by the file's name, once it is read
    elif kind == "parsed-literal":
        lang = ""
    else:  # `::`, or `.. code-block::` without a language: the page's `.. highlight::`
        lang = _language(node.get("rst_lang") or highlight)
    container = _container(node)
    return RstBlock(
        lang,
        node.astext(),
        node.line or 0,
        _anchor(section),
        section[0].astext() if section is not None and len(section) else "",
        f"{kind}:{lang or 'plain'}" + (f" in {container}" if container else ""),
        node.get("rst_include", ""),
        node.get("rst_options"),
    )


def _anchor(section: nodes.Element | None) -> str | None:
    """The section's id: the label written before it (`.. _l1_cache_example:` gives `l1-cache-example`)
    or its title's, rather than the `id2` docutils makes up where those two collide; the HTML Sphinx
    writes holds every one of its ids."""
    ids = section["ids"] if section is not None else []
    return next((i for i in ids if not _MADE_UP_ID.match(i)), ids[0] if ids else None)


def _language(lang: str) -> str:
    """The language a block is read in: Sphinx's `default`/`none`/`guess` name none (read as shell)."""
    return "" if lang in ("default", "none", "guess") else lang


def _enclosing(node: nodes.Node, kind: type) -> nodes.Element | None:
    parent = node.parent
    while parent is not None and not isinstance(parent, kind):
        parent = parent.parent
    return parent


def _container(node: nodes.Node) -> str:
    """The directive a block sits in (`tab`, `note`), nearest first; "" at a section's top level."""
    parent = node.parent
    while parent is not None and not isinstance(parent, (nodes.section, nodes.document)):
        if isinstance(parent, nodes.container) and parent.get("rst_directive"):
            return parent["rst_directive"]
        if isinstance(parent, nodes.Admonition):
            return parent.tagname
        parent = parent.parent
    return ""


def _in_message(node: nodes.Node) -> bool:
    """A block docutils shows inside one of its problem reports (the text of a broken directive)."""
    return _enclosing(node, nodes.system_message) is not None


def title(document: nodes.document) -> str:
    """The page's title: its first section's."""
    section = next(iter(document.findall(nodes.section)), None)
    return section[0].astext() if section is not None and len(section) else ""


def rst_snippets(
    text: str, place: Place, tree_root: Path | None, page: Path | None = None
) -> tuple[list[Snippet], list[Diagnostic]]:
    """Snippets of a reST page (`page`: its file, which `literalinclude` paths are relative to)."""
    if not any(h in text for h in _PAGE_HINTS):
        return [], []
    document = parse(text, place.file)
    snippets: list[Snippet] = []
    diagnostics: list[Diagnostic] = []
    for block in blocks(document):
        at = place.at(block.line, anchor=block.anchor, heading=block.heading, context=block.context)
        if block.include:
            found, diags = _include(block, at, tree_root, page)
        else:
            found, diags = snippets_from_block(block.lang or "", block.text, at)
        snippets += found
        diagnostics += diags
    page_title = place.title or title(document) or title_from_file(place.file)
    for snippet in snippets:
        for source in snippet.sources:
            source.title = source.title or page_title
    return snippets, diagnostics


def _include(
    block: RstBlock, place: Place, root: Path | None, page: Path | None
) -> tuple[list[Snippet], list[Diagnostic]]:
    """A `literalinclude`'s snippets, at the directive's line (context `include:FILE:LINE`), when its
    file is in the tree; else a diagnostic."""
    path = _included_path(block.include, page, root)
    if path is None or root is None or not bounds.within(root, path) or not path.is_file():
        where = "leads out of" if path is None or root is None or not bounds.within(root, path) else "is not in"
        message = f"`.. literalinclude:: {block.include}`: the file {where} this tree; not read"
        return [], [Diagnostic("warning", "unresolved-include", message, *_where(place))]
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else block.include
    code, diagnostics = read_text(path, place.corpus, place.version, rel, root)
    lang = block.lang if block.lang is not None else _SUFFIX_LANGS.get(path.suffix.lower())
    if code is None or lang is None:
        return [], diagnostics
    numbers, code = _shown(code, block.options or {})
    found, diags = snippets_from_block(lang, code, place.at(1, context=f"include:{rel}"))
    inside = place.context.partition(" in ")[2]
    for snippet in found:
        for source in snippet.sources:  # the reader sees it on the page, at the directive's line
            shown = numbers[source.line - 1] if 0 < source.line <= len(numbers) else source.line
            source.context = f"include:{rel}:{shown}" + (f" in {inside}" if inside else "")
            source.line = place.line
    return found, diagnostics + diags


def _included_path(target: str, page: Path | None, root: Path | None) -> Path | None:
    """Where Sphinx looks for a `literalinclude`: beside the page, or (`/x`) under the folder of the
    site's conf.py (the source folder), else the tree's root."""
    if page is None or root is None or not target:
        return None
    if target.startswith("/"):
        folder = next((p for p in page.parents if (p / "conf.py").is_file() and p.is_relative_to(root)), root)
        return Path(os.path.normpath(folder / target.lstrip("/")))
    return Path(os.path.normpath(page.parent / target))


def _shown(code: str, options: dict) -> tuple[list[int], str]:
    """(the file line of each line shown, the text shown) of an included file under Sphinx's
    `:start-after:`/`:start-at:`, `:end-before:`/`:end-at:` and `:lines:` (in Sphinx's order);
    other options (`:pyobject:`) show the whole file here."""
    lines = list(enumerate(code.splitlines(), start=1))
    for option, start in (("start-after", True), ("start-at", True), ("end-before", False), ("end-at", False)):
        marker = options.get(option)
        at = next((i for i, (_, line) in enumerate(lines) if marker and marker in line), None)
        if at is not None:
            keep_marker = option.endswith("-at")
            lines = lines[at + (0 if keep_marker else 1) :] if start else lines[: at + (1 if keep_marker else 0)]
    wanted = _line_numbers(options.get("lines", ""), len(lines))
    if wanted:
        lines = [lines[i] for i in wanted]
    return [n for n, _ in lines], "\n".join(line for _, line in lines) + "\n"


def _line_numbers(spec: str, total: int) -> list[int]:
    """Sphinx's `parselinenos`: `1,3,5-10,20-` as 0-based indexes within `total` lines; [] for none or a
    malformed spec (then every line is shown)."""
    out: list[int] = []
    for part in spec.split(",") if spec.strip() else []:
        first, dash, last = part.strip().partition("-")
        try:
            begin = int(first) if first else 1
            end = (int(last) if last else total) if dash else begin
        except ValueError:
            return []
        out += [i - 1 for i in range(begin, end + 1) if 0 < i <= total]
    return out


def _where(place: Place) -> tuple:
    """A diagnostic's (corpus, version, file, line) for a block."""
    return place.corpus, place.version, place.file, place.line


def included_written_for(snippets: list[Snippet], facts: written_for.PageFacts, root: Path) -> None:
    """After the page's own assignment (extractor/written_for.py, at the directive's line): a command a
    `literalinclude` shows is written for what the included file states, nearest before it (the image
    tag of a manifest), where it states anything; the page's statements otherwise. A tree's own versions
    (an override, a vLLM docs tree) stay."""
    if facts.tree is not None:
        return
    read: dict[str, list] = {}
    for source in (s for snippet in snippets for s in snippet.sources):
        included = _INCLUDED.match(source.context)
        if not included:
            continue
        rel, line = included.group(1), int(included.group(2))
        if rel not in read:
            text, _ = read_text(root / rel, source.corpus, source.version, rel, root)
            read[rel] = written_for.statements(text or "", facts.stable, rel)
        stated = written_for.from_statements(read[rel], line + source.text.count("\n"))
        source.written_for = stated or source.written_for
