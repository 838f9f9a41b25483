"""PyYAML helpers shared by the docs-YAML and recipes readers: nodes with line numbers,
safe against alias bombs (a node reached twice is visited once)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def compose_all(text: str) -> list[yaml.Node]:
    """Every document's root node (composition never expands aliases)."""
    return [n for n in yaml.compose_all(text, Loader=Loader) if n is not None]


def compose_and_load(text: str) -> tuple[yaml.Node | None, Any]:
    """(root node, constructed data) of a single-document YAML text."""
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return node, data


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
    seen: set[int] = set()
    stack = [root]
    while stack and len(seen) < limit:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, yaml.MappingNode):
            for k, v in reversed(node.value):
                stack += [v, k]
        elif isinstance(node, yaml.SequenceNode):
            stack += reversed(node.value)


def strings(node: yaml.Node | None) -> list[yaml.ScalarNode]:
    """A scalar or a sequence of scalars (a k8s `command:`/`args:`), as scalar nodes."""
    if isinstance(node, yaml.ScalarNode):
        return [node]
    if isinstance(node, yaml.SequenceNode):
        return [n for n in node.value if isinstance(n, yaml.ScalarNode)]
    return []
