"""PyYAML helpers shared by the docs-YAML and recipes readers: nodes with line numbers, and the one
bounded loader every YAML of a docs tree goes through (recipes, YAML code blocks, front matter): a
document whose aliases expand past MAX_YAML_ALIAS_GROWTH, or into themselves, is refused before
anything reads it (walks visit a node reached twice once)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import yaml

from driftmatrix.extractor.bounds import MAX_YAML_ALIAS_GROWTH

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
NULL_TAG = "tag:yaml.org,2002:null"
T = TypeVar("T")


class YAMLTooLarge(yaml.YAMLError):
    """A YAML document whose aliases expand past MAX_YAML_ALIAS_GROWTH, or into themselves."""


def compose_all(text: str) -> list[yaml.Node]:
    """Every document's root node (composition never expands aliases; the expansion is checked)."""
    roots = [n for n in yaml.compose_all(text, Loader=Loader) if n is not None]
    if "&" in text:  # an alias needs an anchor (`&name`): most texts have none, and nothing to check
        check_aliases(roots)
    return roots


def compose_and_load(text: str) -> tuple[yaml.Node | None, Any]:
    """(root node, constructed data) of a single-document YAML text."""
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if "&" in text and node is not None:  # as in compose_all
            check_aliases([node])
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return node, data


def load(text: str) -> Any:
    """`yaml.safe_load`, bounded: the data of a single-document YAML text."""
    return compose_and_load(text)[1]


def _own(node: yaml.Node) -> int:
    return 1 + (len(node.value) if isinstance(node, yaml.ScalarNode) else 0)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def check_aliases(roots: list[yaml.Node]) -> None:
    """Raise YAMLTooLarge when the documents, their aliases expanded, are larger than as written by
    more than MAX_YAML_ALIAS_GROWTH (nodes plus scalar characters), or an alias holds itself. Each
    node is sized once (memoized), so this costs what composing did."""
    sizes: dict[int, int] = {}  # expanded size; -1 while its children are being sized
    written = 0
    for root in roots:
        stack = [(root, False)]
        while stack:
            node, children_done = stack.pop()
            if children_done:
                sizes[id(node)] = _own(node) + sum(sizes[id(c)] for c in _children(node))
                continue
            seen = sizes.get(id(node))
            if seen == -1:
                raise YAMLTooLarge(
                    f"an alias refers to a node that contains it (line {node.start_mark.line + 1}): "
                    "its expansion never ends; refused"
                )
            if seen is None:
                sizes[id(node)] = -1
                written += _own(node)
                stack.append((node, True))
                stack += [(c, False) for c in _children(node)]
    growth = sum(sizes[id(r)] for r in roots) - written
    if growth > MAX_YAML_ALIAS_GROWTH:
        raise YAMLTooLarge(
            f"its aliases expand it by {growth:,} nodes and characters, over the "
            f"{MAX_YAML_ALIAS_GROWTH:,} allowed (an alias bomb?); refused"
        )


def scalar_line(node: yaml.ScalarNode) -> int:
    """0-based line where a scalar's text starts (block scalars start after `|`/`>`)."""
    return node.start_mark.line + (1 if node.style in ("|", ">") else 0)


def mapping(node: yaml.Node) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def child(node: yaml.Node | None, *path: str) -> yaml.Node | None:
    for key in path:
        if node is None:
            return None
        node = mapping(node).get(key)
    return node


def walk(root: yaml.Node, limit: int = 200_000) -> Iterator[yaml.Node]:
    """Every node once, depth first; stops after `limit` nodes."""
    for node, _ in walk_scoped(root, lambda _node, inherited: inherited, None, limit):
        yield node


def walk_scoped(
    root: yaml.Node, scope: Callable[[yaml.Node, T], T], initial: T, limit: int = 200_000
) -> Iterator[tuple[yaml.Node, T]]:
    """Like `walk`, with each node's scope: `scope(node, its parent's scope)` (the root's parent's is
    `initial`), e.g. the environment a YAML mapping sets for everything below it."""
    seen: set[int] = set()
    stack = [(root, initial)]
    while stack and len(seen) < limit:
        node, inherited = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        own = scope(node, inherited)
        yield node, own
        if isinstance(node, yaml.MappingNode):
            for k, v in reversed(node.value):
                stack += [(v, own), (k, own)]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(n, own) for n in reversed(node.value)]


def strings(node: yaml.Node | None) -> list[yaml.ScalarNode]:
    """A scalar or a sequence of scalars (a k8s `command:`/`args:`), as scalar nodes."""
    if isinstance(node, yaml.ScalarNode):
        return [node]
    if isinstance(node, yaml.SequenceNode):
        return [n for n in node.value if isinstance(n, yaml.ScalarNode)]
    return []


# Marks where a file line's text starts inside a scalar's value: a private-use character, printable
# to YAML (so the marked text parses the same), that no doc contains.
_MARK = "\ue000"


def relaid(text: str, node: yaml.ScalarNode) -> str | None:
    """A folded (`>`), quoted or plain scalar that spans lines, its value laid out again so that
    line i of the result holds what file line `node.start_mark.line + i` contributes: where YAML
    joined lines, the result has `\\` and a newline, which a shell reads as nothing. A shell reading
    the result sees the same commands, on the lines where the file has them.

    None where the value's lines already are the file's (a literal `|` or one-line scalar), and
    where the text cannot be re-laid (the marked text does not parse to the same value)."""
    if not _relayable(node) or _MARK in text:
        return None
    lines = text.split("\n")
    marks = _marks(lines, node)
    for n, col in marks:
        lines[n] = lines[n][:col] + _MARK + lines[n][col:]
    return _laid_out(node, _scalar_at("\n".join(lines), node.start_mark.line, node.start_mark.column), marks)


def _relayable(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.style != "|" and node.end_mark.line != node.start_mark.line


def _marks(lines: list[str], node: yaml.ScalarNode) -> list[tuple[int, int]]:
    """(file line, column) where each line after a scalar's first starts its text inside the scalar."""
    start, end = node.start_mark, node.end_mark
    marks = []
    for n in range(start.line + 1, min(end.line, len(lines) - 1) + 1):
        line = lines[n]
        col = len(line) - len(line.lstrip(" \t"))
        if col == len(line) or (n == end.line and col >= end.column):
            continue  # blank lines fold differently once marked; past the end is another node
        marks.append((n, col))
    return marks


def _laid_out(node: yaml.ScalarNode, twin: yaml.ScalarNode | None, marks: list[tuple[int, int]]) -> str | None:
    """The re-laid value from the scalar's twin in the marked text (None when it is not the same value)."""
    if twin is None or twin.value.replace(_MARK, "") != node.value or twin.value.count(_MARK) != len(marks):
        return None
    out: list[str] = []
    row = 0
    targets = iter(n - node.start_mark.line for n, _ in marks)  # lines after the first, relative to it
    for ch in twin.value:
        if ch == _MARK:
            target = next(targets)
            # Fewer rows than the target: lines were joined; a `\`-newline adds the row and no text.
            # More (a `\n` escape in a quoted scalar): nothing to do, later lines drift.
            out.append("\\\n" * max(0, target - row))
            row = max(row, target)
        else:
            row += ch == "\n"
            out.append(ch)
    return "".join(out)


class Relaid:
    """`relaid(text, node)` for the scalars of one YAML text, from one parse of it with every
    multi-line scalar marked at once: a parse per scalar cost the square of a block holding many
    (4,000 folded commands: 72 s). A mark sits inside its own scalar's text, after the indentation
    of a line the scanner reads as that scalar's, so it changes no other node's value or structure
    (a node starting on a line marked for the scalar before it is found one column on); each scalar
    gets what its own parse gave. A scalar sharing marked lines with another, or a text whose joint
    parse fails, is re-laid alone, as before."""

    def __init__(self, text: str, roots: list[yaml.Node]):
        self.text, self.roots = text, roots
        self.lines = text.split("\n")
        self._laid: dict[int, str | None] | None = None

    def __call__(self, node: yaml.ScalarNode) -> str | None:
        if not _relayable(node) or _MARK in self.text:
            return None
        if self._laid is None:
            self._laid = self._all()
        if id(node) in self._laid:
            return self._laid[id(node)]
        return relaid(self.text, node)

    def _all(self) -> dict[int, str | None]:
        lines = list(self.lines)
        marked: dict[int, int] = {}  # file line -> the column of its mark
        nodes: list[tuple[yaml.ScalarNode, list[tuple[int, int]]]] = []
        for node in (n for root in self.roots for n in walk(root) if _relayable(n)):
            marks = _marks(self.lines, node)
            if any(n in marked for n, _ in marks):
                continue  # lines another scalar marked (no valid text has such): done alone, to be safe
            marked.update(marks)
            nodes.append((node, marks))
        for n, col in marked.items():
            lines[n] = lines[n][:col] + _MARK + lines[n][col:]
        try:
            twins = _scalars_by_place("\n".join(lines))
        except yaml.YAMLError:
            return {}
        laid = {}
        for node, marks in nodes:
            start = node.start_mark
            shift = start.line in marked and marked[start.line] <= start.column
            laid[id(node)] = _laid_out(node, twins.get((start.line, start.column + shift)), marks)
        return laid


def _scalars_by_place(text: str) -> dict[tuple[int, int], yaml.ScalarNode]:
    """(line, column) -> the first scalar starting there, in the order `_scalar_at` looks."""
    found: dict[tuple[int, int], yaml.ScalarNode] = {}
    for root in compose_all(text):
        for node in walk(root):
            if isinstance(node, yaml.ScalarNode):
                found.setdefault((node.start_mark.line, node.start_mark.column), node)
    return found


def _scalar_at(text: str, line: int, column: int) -> yaml.ScalarNode | None:
    try:
        roots = compose_all(text)
    except yaml.YAMLError:
        return None
    for root in roots:
        for node in walk(root):
            if isinstance(node, yaml.ScalarNode) and (node.start_mark.line, node.start_mark.column) == (line, column):
                return node
    return None


def fold_kept_breaks(text: str, joint: str) -> str:
    """A folded (`>`) scalar's value, or its re-laid copy, with each line break that YAML kept only
    because a line next to it is indented more than the block (YAML 1.2, 8.1.3: folding joins lines
    of the block's own indentation) replaced by `joint`, as the author of a one-command block meant.
    Breaks next to an empty line (paragraphs) and after a line that ends in `\\` stay."""
    lines = text.split("\n")
    out = [lines[0]]
    for before, line in zip(lines, lines[1:]):
        indented = before[:1] in (" ", "\t") or line[:1] in (" ", "\t")
        fold = indented and before.strip() and line.strip() and not before.endswith("\\")
        out.append(joint + line if fold else "\n" + line)
    return "".join(out)


def span_text(text: str, node: yaml.ScalarNode, lines: list[str] | None = None) -> str:
    """The file lines a scalar spans, from its first line, with what precedes its value on that line
    (`- "`, `args: >`) blanked and a closing quote cut: line i is file line `node.start_mark.line + i`,
    as written. `lines`: the text split into lines, when the caller has them (a split per scalar cost
    the square of a block of many)."""
    start, end = node.start_mark, node.end_mark
    lines = (lines if lines is not None else text.split("\n"))[start.line : end.line + 1]
    quoted = node.style in ('"', "'")
    if quoted and len(lines) > 1:
        lines[-1] = lines[-1][: end.column - 1] + lines[-1][end.column :]
    lead = len(lines[0]) if node.style in ("|", ">") else start.column + quoted
    lines[0] = " " * lead + lines[0][lead:]
    return "\n".join(lines)
