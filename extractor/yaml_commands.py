"""Commands inside YAML blocks of the docs: Kubernetes/kthena containers (`image`,
`command`, `args`, `env`), SkyPilot `run: |` scripts, any string holding `vllm serve`."""

from __future__ import annotations

import re

import yaml

from extractor import yaml_nodes
from extractor.records import Diagnostic, Snippet
from extractor.snippet_builder import Place, build, from_shell_text

_VLLM_IMAGE = re.compile(r"^(docker\.io/)?vllm/vllm-(openai|tpu|omni)")
_K8S_VAR = re.compile(r"\$\([A-Za-z_][A-Za-z0-9_]*\)")  # k8s substitutes $(VAR) in args


def from_yaml_block(text: str, place: Place) -> tuple[list[Snippet], list[Diagnostic]]:
    """Snippets in a YAML code block whose first line is `place.line`."""
    if "vllm" not in text and "speculative" not in text:
        return [], []
    # Docs elide parts of manifests with a bare `...` line (a YAML document-end marker).
    text = re.sub(r"(?m)^[ \t]*\.\.\.[ \t]*$", "", text)
    try:
        roots = yaml_nodes.compose_all(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = place.line + mark.line if mark else place.line
        return [], [Diagnostic("warning", "yaml-error", f"YAML block does not parse: {err}".splitlines()[0],
                               place.corpus, place.version, place.file, line)]
    lines = text.split("\n")
    snippets: list[Snippet] = []
    consumed: set[int] = set()
    for root in roots:
        for node in yaml_nodes.walk(root):
            if isinstance(node, yaml.MappingNode):
                snippets += _container(node, place, lines, consumed)
            elif isinstance(node, yaml.ScalarNode) and id(node) not in consumed and isinstance(node.value, str):
                if "vllm serve" in node.value or "vllm/vllm-" in node.value:
                    snippets += from_shell_text(node.value, place.at(place.line + yaml_nodes.scalar_line(node)))
    return snippets, []


def _container(node: yaml.MappingNode, place: Place, lines: list[str], consumed: set[int]) -> list[Snippet]:
    fields = yaml_nodes.mapping(node)
    command = yaml_nodes.strings(fields.get("command"))
    args = yaml_nodes.strings(fields.get("args"))
    image = fields.get("image")
    image = image.value if isinstance(image, yaml.ScalarNode) else None
    words = command + args
    if not words:
        return []
    env = _env(fields.get("env"))
    texts = [w.value for w in words]
    first = words[0]
    start = first.start_mark.line
    end = max(w.end_mark.line for w in words)
    source = place.source(start, "\n".join(lines[node.start_mark.line:end + 1]).rstrip())
    source.context = "yaml:container"

    def serve(kind: str, argv: list[str], img: str | None = None) -> list[Snippet]:
        consumed.update(id(w) for w in words)
        return [build(kind, argv, env, source, expansions=[_K8S_VAR.findall(a) for a in argv], image=img,
                      docker_options=[] if kind == "docker" else None)]

    if texts[:2] == ["vllm", "serve"]:
        return serve("serve", texts[2:])
    if not command and image and _VLLM_IMAGE.match(image):
        return serve("docker", texts, image)  # the image's entrypoint is the server
    if len(texts) >= 2 and texts[0] in ("sh", "bash", "/bin/sh", "/bin/bash") and texts[1] in ("-c", "-lc", "-ec"):
        consumed.update(id(w) for w in words)
        script = words[2] if len(words) > 2 else None
        if script is None:
            return []
        return from_shell_text(script.value, place.at(place.line + yaml_nodes.scalar_line(script), context="yaml:container"), env)
    return []


def _env(node: yaml.Node | None) -> dict[str, str]:
    """k8s `env: [{name, value}]`; `valueFrom` secrets are left to the runner's environment."""
    out: dict[str, str] = {}
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            fields = yaml_nodes.mapping(item)
            name, value = fields.get("name"), fields.get("value")
            if isinstance(name, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode):
                out[name.value] = value.value
    return out
