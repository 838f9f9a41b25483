"""Docker Compose files (`docker-compose.yml`, `compose.yaml`, a compose YAML block of a page): each
service whose container runs vLLM's server is the command a reader runs with `docker compose up`.

A service is read as `docker run` reads the same container (extractor/shell_commands.py
`container_invocations`): its `image:`, its `entrypoint:` (replacing the image's entry point) and its
`command:` (the words after the image), each a string that compose splits into words as a shell
does, or a list; `environment:` (a mapping or `KEY=value` items) is the command's env, as `-e` is.
Compose fills in `${VAR:-default}` (and `${VAR-default}`) from the reader's shell before anything
runs: where the reader set nothing, the default — `${VLLM_IMAGE:-vllm/vllm-openai:v0.6.6}` runs that
image, so the page is written for 0.6.6 (extractor/written_for.py). A `$VAR` without a default is
the reader's to set: a placeholder. A service takes the keys of the mappings it merges (`<<: *name`).

Not read: `env_file:` and a `.env` file beside the compose file (values the reader keeps elsewhere),
a service without an `image:` (built from a Dockerfile: its entry point is not known here), and
`docker compose run SERVICE ARGS` lines of a page (a service's command overridden on the shell).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import replace

import yaml

from driftmatrix.extractor import yaml_nodes
from driftmatrix.extractor.docker_run import ContainerRun
from driftmatrix.extractor.shell_commands import Invocation, container_invocations, simple_commands
from driftmatrix.extractor.shell_lexer import Word, lex
from driftmatrix.extractor.snippet_builder import Place, build
from driftmatrix.extractor.snippet_record import Snippet

_DEFAULTED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?-([^${}]*)\}")
_LEFT = re.compile(r"\$(?:\{[^{}]*\}|[A-Za-z_][A-Za-z0-9_]*)")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_MERGES = 8
"""How deep `<<:` merges are followed (a service merging a mapping that merges another …)."""


def is_compose(root: yaml.Node) -> bool:
    """A compose document: a top-level `services:` mapping of mappings."""
    services = yaml_nodes.child(root, "services")
    return isinstance(services, yaml.MappingNode) and any(isinstance(v, yaml.MappingNode) for _, v in services.value)


def from_compose(root: yaml.Node, relay: yaml_nodes.Relaid, place: Place, consumed: set[int]) -> list[Snippet]:
    """The vLLM servers a compose document's services run, each at the file line where its command
    starts; the nodes of a service read here are added to `consumed` (no other reader takes them)."""
    services = yaml_nodes.child(root, "services")
    out: list[Snippet] = []
    for key, node in services.value if isinstance(services, yaml.MappingNode) else []:
        found = _service(key.value if isinstance(key, yaml.ScalarNode) else "", node, relay, place)
        if found:
            consumed.update(id(n) for n in yaml_nodes.walk(node))
            out += found
    return out


def _service(name: str, node: yaml.Node, relay: yaml_nodes.Relaid, place: Place) -> list[Snippet]:
    fields = merged(node)
    image = fields.get("image")
    if not isinstance(image, yaml.ScalarNode) or not image.value:
        return []
    entry = _words(fields.get("entrypoint"), relay)
    args = _words(fields.get("command"), relay)
    program = [*(entry or []), *(args or [])]
    if not program:  # the image's default command: nothing the file says to judge
        return []
    start, end = program[0].line, max(w.line for w in program)
    run = ContainerRun(_word(image), [], _env(fields.get("environment"), start), entry, args or [])
    return [_snippet(inv, name, relay.lines, place) for inv in container_invocations(run, start, end, own_lines=True)]


def merged(node: yaml.Node, depth: int = 0) -> dict[str, yaml.Node]:
    """A mapping's keys, with those of the mappings it merges (`<<: *anchor`, `<<: [*a, *b]`) under
    its own (an earlier merged mapping wins over a later one, as YAML's merge key says)."""
    own = yaml_nodes.mapping(node)
    base = own.get("<<")
    if base is None or depth >= _MAX_MERGES:
        return own
    sources = base.value if isinstance(base, yaml.SequenceNode) else [base]
    fields: dict[str, yaml.Node] = {}
    for source in reversed(sources):
        fields |= merged(source, depth + 1)
    return fields | {k: v for k, v in own.items() if k != "<<"}


def interpolate(text: str) -> str:
    """`${VAR:-default}` and `${VAR-default}` as compose fills them in where the reader set nothing:
    the default. Any other `$VAR` stays (the reader's to set)."""
    return _DEFAULTED.sub(lambda m: m[2], text)


def _word(node: yaml.ScalarNode) -> Word:
    """One list item (or the image) as a word: compose passes it as written, its defaults filled in."""
    text = interpolate(node.value)
    return Word(text, yaml_nodes.scalar_line(node), _LEFT.findall(text), True)


def _words(node: yaml.Node | None, relay: yaml_nodes.Relaid) -> list[Word] | None:
    """`entrypoint:`/`command:` as words at their file lines: a list's items, or a string split as a
    shell splits it (compose does); None when the key is absent (the image's own runs)."""
    if isinstance(node, yaml.SequenceNode):
        return [_word(n) for n in node.value if isinstance(n, yaml.ScalarNode)]
    if not isinstance(node, yaml.ScalarNode) or node.tag == yaml_nodes.NULL_TAG:
        return None
    laid = relay(node)
    first = node.start_mark.line if laid is not None else yaml_nodes.scalar_line(node)
    text = interpolate(laid if laid is not None else node.value)
    words = [w for cmd, _ in simple_commands(lex(text).tokens) for w in cmd]
    return [replace(w, line=w.line + first) for w in words]


def _env(node: yaml.Node | None, line: int) -> list[Word]:
    """`environment:` as `KEY=value` words: `{KEY: value}` or `[KEY=value]` (a bare `KEY`, or `KEY:`
    without a value, passes the reader's own value: not recorded)."""
    pairs: list[tuple[str, str]] = []
    if isinstance(node, yaml.MappingNode):
        pairs = [
            (k.value, v.value)
            for k, v in node.value
            if isinstance(k, yaml.ScalarNode) and _NAME.match(k.value)
            if isinstance(v, yaml.ScalarNode) and v.tag != yaml_nodes.NULL_TAG
        ]
    elif isinstance(node, yaml.SequenceNode):
        items = [n.value.split("=", 1) for n in node.value if isinstance(n, yaml.ScalarNode)]
        pairs = [(kv[0], kv[1]) for kv in items if len(kv) == 2 and _NAME.match(kv[0])]
    out = []
    for key, value in pairs:
        text = f"{key}={interpolate(value)}"
        out.append(Word(text, line, _LEFT.findall(text), True))
    return out


def _snippet(inv: Invocation, service: str, lines: list[str], place: Place) -> Snippet:
    """The snippet of a service's server: the file lines of its command, its lints at file lines."""
    text = "\n".join(lines[inv.line : inv.end_line + 1])
    source = place.source(inv.line, _dedent(text))
    source.context = f"compose:services.{service}" if service else "compose"
    return build(
        "docker",
        [w.text for w in inv.args],
        inv.env,
        source,
        expansions=[w.expansions for w in inv.args],
        env_expansions={w.text.split("=", 1)[0]: w.expansions for w in inv.env_words},
        lints=[replace(lint, line=None if lint.line is None else place.line + lint.line) for lint in inv.lints],
        image=inv.image,
        image_expansions=inv.image_expansions,
        docker_options=inv.docker_options,
        placeholder_models=place.placeholder_models,
    )


def _dedent(text: str) -> str:
    return textwrap.dedent(text).strip("\n")
