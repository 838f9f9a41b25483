"""The snippets of a Markdown page: its code blocks, each read by its language
(extractor/code_blocks.py), the fence problems mkdocs shows differently from what the page means
(a fence never closed, closed on the command's own line, indented outside any container), the
Python an `--8<--` include brings in from the tree, and the Markdown of a recipe's guide and
runbooks (extractor/recipes_yaml.py)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from driftmatrix.extractor import bounds
from driftmatrix.extractor.code_blocks import may_hold_snippet, snippets_from_block
from driftmatrix.extractor.file_text import read_text
from driftmatrix.extractor.markdown_blocks import Headings, code_blocks, title_from_file
from driftmatrix.extractor.python_calls import from_python
from driftmatrix.extractor.recipes_yaml import Guide
from driftmatrix.extractor.snippet_builder import Place
from driftmatrix.extractor.snippet_record import Diagnostic, Lint, Snippet

_INCLUDE = re.compile(r"""^[ \t]*-{1,3}8<-{1,3}[ \t]+["']([^"'\n]+)["']""", re.M)
_SKIP_DIRS = {".git", "node_modules", ".next", "public", "site", "__pycache__"}
_INCLUDE_MARK = "--8<--"


def markdown_snippets(
    text: str, place: Place, tree_root: Path | None, line_offset: int = 0
) -> tuple[list[Snippet], list[Diagnostic]]:
    """Snippets of a Markdown page (or a recipe guide starting at `line_offset`: `place.title` is its recipe's)."""
    snippets: list[Snippet] = []
    diagnostics: list[Diagnostic] = []
    if not may_hold_snippet(text) and _INCLUDE_MARK not in text:  # no reader could find anything: not parsed
        return snippets, diagnostics
    headings = Headings()
    for block in code_blocks(text, headings):
        context = f"fence:{block.lang or 'plain'}" + (f" in {block.container}" if block.container else "")
        found, diags = snippets_from_block(
            block.lang,
            block.text,
            place.at(block.line + line_offset, anchor=block.anchor, heading=block.heading, context=context),
        )
        if block.unclosed:
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "unterminated-fence",
                    f"the code fence opened on line {block.line + line_offset - 1} is never closed: it runs to the "
                    "end of its container or page",
                    place.corpus,
                    place.version,
                    place.file,
                    block.line + line_offset - 1,
                )
            )
        if block.closed_on_text_line:
            _fence_on_command_line(found, block.closed_on_text_line + line_offset, place)
        if block.stray_indent:
            for snippet in found:
                snippet.lints.append(
                    Lint(
                        "fence-not-rendered",
                        f"the opening fence is indented by {block.stray_indent} space(s) outside any list or "
                        "container: mkdocs renders this block as a paragraph of text, not as code",
                        block.line + line_offset - 1,
                        place.file,
                        place.corpus,
                        place.version,
                    )
                )
        snippets += found
        diagnostics += diags
    if tree_root is not None and _INCLUDE_MARK in text:
        s, d = _includes(text, place, tree_root, line_offset)
        snippets += s
        diagnostics += d
    title = place.title or headings.title or title_from_file(place.file)  # known once the page is read
    for snippet in snippets:
        for source in snippet.sources:
            source.title = source.title or title
    return snippets, diagnostics


def _fence_on_command_line(found: list[Snippet], closing: int, place: Place) -> None:
    """Lint the command whose line holds the block's closing fence (`vllm serve x  ````)."""
    for snippet in found:
        src = snippet.sources[0]
        if src.line <= closing <= src.line + src.text.count("\n"):
            snippet.lints.append(
                Lint(
                    "fence-on-command-line",
                    "the closing fence is on the command's own line: Markdown closes a code block only on a "
                    "line of its own, so the page shows the command ending in the fence's backquotes (bash "
                    "reads an unterminated command substitution there) and the rest of the page inside the block",
                    closing,
                    place.file,
                    place.corpus,
                    place.version,
                )
            )


def _includes(text: str, place: Place, root: Path, line_offset: int) -> tuple[list[Snippet], list[Diagnostic]]:
    """`--8<-- "examples/….py"`: read the included Python when the tree has it. Linear in the page: each
    file is read and parsed once (its snippets copied per include), lines counted on from the include before."""
    snippets, diagnostics, read = [], [], {}
    counted, line = 0, 1 + line_offset
    for m in _INCLUDE.finditer(text):
        target = m.group(1).split(":", 1)[0].strip()
        if not (target.endswith(".py") and target.startswith("examples/")):
            continue
        line, counted = line + text.count("\n", counted, m.start()), m.start()
        if target not in read:
            read[target] = _included(target, place, root)
        there, found, diags = read[target]
        if not there:
            where = "leads out of" if not bounds.within(root, root / target) else "is not in"
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "unresolved-include",
                    f'`--8<-- "{m.group(1)}"`: {target} {where} this tree; not read',
                    place.corpus,
                    place.version,
                    place.file,
                    line,
                )
            )
            continue
        diagnostics += [copy.copy(d) for d in diags]
        for snippet in (found := copy.deepcopy(found)):  # the reader sees it on the page, at the include line
            for source in snippet.sources:
                source.context = f"include:{target}:{source.line}"
                source.line = line
        snippets += found
    return snippets, diagnostics


def _included(target: str, place: Place, root: Path) -> tuple[bool, list[Snippet], list[Diagnostic]]:
    """(the file is in the tree, its snippets, the diagnostics of reading it) for an include."""
    path = root / target
    if not bounds.within(root, path) or not path.is_file():
        return False, [], []
    code, diagnostics = read_text(path, place.corpus, place.version, target, root)
    found, diags = from_python(code, place.at(1, context=f"include:{target}")) if code is not None else ([], [])
    return True, found, diagnostics + diags


def recipe_markdown(guide: Guide, place: Place) -> tuple[list[Snippet], list[Diagnostic]]:
    """The commands of a recipe's `guide:` and of its presets' `runbook:` Markdown (each marked with
    the preset it belongs to)."""
    page = place.at(place.line, title=guide.title)
    found, diags = markdown_snippets(guide.text, page, None, line_offset=guide.line)
    for name, text, line in guide.runbooks:
        more, more_diags = markdown_snippets(text, page, None, line_offset=line)
        for snippet in more:
            for source in snippet.sources:
                source.context = f"{source.context} in recipe:presets.{name}.runbook"
        found, diags = found + more, diags + more_diags
    return found, diags
