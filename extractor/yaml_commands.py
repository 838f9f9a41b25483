"""Commands inside YAML blocks of the docs: Kubernetes/kthena containers (`image`,
`command`, `args`, `env`), SkyPilot `run: |` scripts, dstack `commands:`, any string holding
`vllm serve`.

The environment the YAML sets around a command (SkyPilot `envs:`, dstack and Kubernetes `env:`,
compose `environment:`) is recorded in the snippet's env, and a literal value fills in the `$VAR`
(Kubernetes: also `$(VAR)`) that the command refers to it by, as the process that runs the command
would see it. Placeholders (`<your-token>`, `$OTHER`), unset names (dstack's bare `- HF_TOKEN`) and
secrets are not filled in: a `$VAR` naming one stays a placeholder for the reader (or, for the
runner's own variables such as HF_TOKEN, the runner) to supply.
"""

from __future__ import annotations

import re

import yaml

from driftmatrix.common import vllm_plugins
from driftmatrix.extractor import compose_files, yaml_nodes
from driftmatrix.extractor.docker_run import is_server_image
from driftmatrix.extractor.serve_args import placeholders_in
from driftmatrix.extractor.shell_commands import ShellScan, assigned_names, assigns, scan
from driftmatrix.extractor.shell_lexer import Word
from driftmatrix.extractor.snippet_builder import Place, build, from_shell_text
from driftmatrix.extractor.snippet_record import LEGACY_SERVER, Diagnostic, Lint, Snippet
from driftmatrix.extractor.wrappers import vllm_entry

_K8S_VAR = re.compile(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)")  # k8s substitutes $(VAR) in command/args
_ENV_KEYS = ("env", "envs", "environment")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$", re.S)  # dstack `- KEY=VALUE`, `- KEY`
_SHELL_VAR = re.compile(r"^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})$")
# A whole word of the name says it holds a secret (HF_TOKEN, MY_API_KEY; not TOKENIZERS_PARALLELISM):
# its value is the reader's own, whatever the docs show.
_SECRET = re.compile(r"(^|_)(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(_|$)", re.I)
_SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash")
_SHELL_C = re.compile(r"^-[a-z]*c[a-z]*$")  # `-c`, `-lc`, `-exc`: the shell runs the next word as a script

Env = dict[str, str | None]
"""Variables a YAML mapping sets for what runs under it; None: named but unset (its value comes from
wherever the tool is launched, or from a Kubernetes secret)."""


def from_yaml_block(text: str, place: Place) -> tuple[list[Snippet], list[Diagnostic]]:
    """Snippets in a YAML code block whose first line is `place.line`."""
    if "vllm" not in text and "speculative" not in text:
        return [], []
    # Docs elide parts of manifests with a bare `...` line (a YAML document-end marker).
    text = re.sub(r"(?m)^[ \t]*\.\.\.[ \t]*$", "", text)
    try:
        roots = yaml_nodes.compose_all(text)
    except yaml_nodes.YAMLTooLarge as err:
        return [], [
            Diagnostic(
                "error",
                "yaml-alias-expansion",
                f"YAML block: {err}",
                place.corpus,
                place.version,
                place.file,
                place.line,
            )
        ]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = place.line + mark.line if mark else place.line
        return [], [
            Diagnostic(
                "warning",
                "yaml-error",
                f"YAML block does not parse: {err}".splitlines()[0],
                place.corpus,
                place.version,
                place.file,
                line,
            )
        ]
    snippets: list[Snippet] = []
    consumed: set[int] = set()
    relay = yaml_nodes.Relaid(text, roots)  # the block's lines and re-laid scalars, made once for all its commands
    for root in roots:
        if compose_files.is_compose(root):  # a service is read as compose runs it, not as a k8s container
            snippets += compose_files.from_compose(root, relay, place, consumed)
        for node, env in yaml_nodes.walk_scoped(root, _scope, {}):
            if id(node) in consumed:
                continue
            if isinstance(node, yaml.MappingNode):
                snippets += _container(node, relay, place, env, consumed)
            elif isinstance(node, yaml.ScalarNode) and isinstance(node.value, str):
                if "vllm serve" in node.value or "vllm/vllm-" in node.value:
                    snippets += _script(node, relay, place, env)
    return snippets, []


def _scope(node: yaml.Node, inherited: Env) -> Env:
    """The environment in force at `node`: its parent's, plus (overriding) what a mapping sets itself."""
    if not isinstance(node, yaml.MappingNode):
        return inherited
    fields = yaml_nodes.mapping(node)
    own: Env = {}
    for key in _ENV_KEYS:
        own |= _env_entries(fields.get(key))
    return inherited | own if own else inherited


def _env_entries(node: yaml.Node | None) -> Env:
    """`{KEY: value}` (SkyPilot, compose), `[KEY=value, KEY]` (dstack, compose) or
    `[{name, value}]` (Kubernetes; `valueFrom` is a secret or field: unset here)."""
    out: Env = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and _NAME.match(key.value):
                out[key.value] = _value(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            if isinstance(item, yaml.ScalarNode):
                m = _ENTRY.match(item.value)
                if m:
                    out[m[1]] = m[2]
                continue
            name = yaml_nodes.mapping(item).get("name")
            if isinstance(name, yaml.ScalarNode) and _NAME.match(name.value):
                out[name.value] = _value(yaml_nodes.mapping(item).get("value"))
    return out


def _value(node: yaml.Node | None) -> str | None:
    if isinstance(node, yaml.ScalarNode) and node.tag != yaml_nodes.NULL_TAG:
        return node.value
    return None


def _recorded(env: Env) -> dict[str, str]:
    """What the YAML sets for the served process (placeholders included: build() and the runner judge
    those; the runner supplies its own HF_TOKEN and passes no secret or placeholder on)."""
    return {k: v for k, v in env.items() if v is not None}


def _literals(env: Env) -> dict[str, str]:
    """The values that fill in a `$VAR` in the command: set, not secret, and not placeholders."""
    return {k: v for k, v in env.items() if v and not _SECRET.search(k) and "$" not in v and not placeholders_in(v, [])}


def _k8s_expand(text: str, values: dict[str, str]) -> str:
    """Kubernetes replaces `$(VAR)` in a container's command and args by the container's env
    before anything runs (an undefined one stays as written)."""
    return _K8S_VAR.sub(lambda m: values.get(m[1], m[0]), text)


def _container(
    node: yaml.MappingNode, relay: yaml_nodes.Relaid, place: Place, env: Env, consumed: set[int]
) -> list[Snippet]:
    fields = yaml_nodes.mapping(node)
    command = yaml_nodes.strings(fields.get("command"))
    args = yaml_nodes.strings(fields.get("args"))
    image = fields.get("image")
    image = image.value if isinstance(image, yaml.ScalarNode) else None
    words = command + args
    if not words:
        return []
    values = _literals(env)
    texts = [_k8s_expand(w.value, values) for w in words]
    if len(texts) >= 2 and texts[0] in _SHELLS and _SHELL_C.match(texts[1]):
        consumed.update(id(w) for w in words)
        # `bash -c -- 'script'`: `--` ends bash's options; the script is the next word
        at = 3 if texts[2:3] == ["--"] else 2
        script = words[at] if len(words) > at else None
        found = (
            []
            if script is None
            else _script(script, relay, place.at(place.line, context="yaml:container"), env, k8s=True)
        )
        return _in_image(found, image)
    prefix = _server_prefix(texts)
    serve = prefix is not None
    entrypoint = not command and image and is_server_image(image)  # the image's entrypoint is the server
    if not serve and not entrypoint:
        return []
    consumed.update(id(w) for w in words)
    lines = relay.lines
    end = max(w.end_mark.line for w in words)
    source = place.source(words[0].start_mark.line, "\n".join(lines[node.start_mark.line : end + 1]).rstrip())
    source.context = "yaml:container"
    skip, lints = prefix if serve else (0, [])
    argv = texts[skip:]
    return _in_image(
        [
            build(
                "serve" if serve else "docker",
                argv,
                _recorded(env),
                source,
                lints=lints,
                expansions=[[m[0] for m in _K8S_VAR.finditer(a)] for a in argv],
                image=None if serve else image,
                docker_options=None if serve else [],
                placeholder_models=place.placeholder_models,
            )
        ],
        image,
    )


def _in_image(found: list[Snippet], image: str | None) -> list[Snippet]:
    """The container's commands, each source marked with the vLLM plugin its image carries
    (`image: quay.io/ascend/vllm-ascend:…` above `command: [vllm, serve, …]`: the snippet is `serve`,
    its image is not in it; extractor/sites.py mark_plugins keeps this mark)."""
    plugin = vllm_plugins.of_image(image)
    for snippet in found if plugin else ():
        for source in snippet.sources:
            source.plugin = plugin.name
    return found


def _server_prefix(texts: list[str]) -> tuple[int, list[Lint]] | None:
    """How many words of an exec-form command start the vLLM server (`vllm serve`, `/opt/venv/bin/vllm
    serve`, `python3 -m vllm.entrypoints.openai.api_server`), with the lint the legacy one gets as in a
    shell block; None when it is not the server."""
    n = vllm_entry([Word(t, 0) for t in texts[:3]])
    if n == 3 and texts[2] == LEGACY_SERVER:
        return 3, [
            Lint(
                "legacy-entrypoint",
                "`python -m vllm.entrypoints.openai.api_server` is the legacy entry "
                "point; `vllm serve` is the documented one",
            )
        ]
    if n is not None and texts[n : n + 1] == ["serve"]:
        return n + 1, []
    return None


def _script(
    node: yaml.ScalarNode, relay: yaml_nodes.Relaid, place: Place, env: Env, k8s: bool = False
) -> list[Snippet]:
    """The commands of a shell script held in a scalar (a `run: |` block, an `sh -c` argument),
    each at the file line where it starts."""
    # A variable the script assigns itself (`MODEL=x`, `export MODEL=x`) may no longer hold the YAML's value.
    literals = _literals(env)
    names = assigned_names(node.value) if literals else frozenset()  # one pass, not one search per variable
    values = {k: v for k, v in literals.items() if not assigns(node.value, k, names)}

    def scanned(script: str) -> ShellScan:
        found = scan(_k8s_expand(script, values) if k8s else script)
        _substitute(found, values)
        return found

    found, first, shown, laid = scanned(node.value), yaml_nodes.scalar_line(node), node.value, node.value
    # A folded or quoted scalar joins the file's lines: a copy laid out line for line gives each
    # command's file lines (its words stay the value's: inside '…' the copy's `\`-newlines are text).
    relaid = relay(node)
    if relaid is not None and _placed(found, scanned(relaid)):
        first, shown, laid = node.start_mark.line, yaml_nodes.span_text(relay.text, node, relay.lines), relaid
    if node.style == ">":
        found = _folded_as_meant(node.value, laid, found, scanned)
    return from_shell_text(shown, place.at(place.line + first), _recorded(env), found=found)


def _placed(found: ShellScan, twin: ShellScan) -> bool:
    """Give `found`'s commands the lines (and lints) of the same commands in `twin`, a scan of the
    same script laid out otherwise; False (nothing changed) when they are not the same commands."""
    if [inv.kind for inv in twin.invocations] != [inv.kind for inv in found.invocations]:
        return False
    for inv, placed in zip(found.invocations, twin.invocations):
        inv.line, inv.end_line, inv.lints = placed.line, placed.end_line, placed.lints
    found.lints = twin.lints
    return True


def _folded_as_meant(value: str, laid: str, found: ShellScan, scanned) -> ShellScan:
    """A `>` block folds only lines of its own indentation: a more-indented line keeps its line break
    (YAML 1.2, 8.1.3), so `vllm serve m` followed by more-indented `--tensor-parallel-size 8` lines
    is, for the shell, `vllm serve m` alone and then `--tensor-parallel-size 8` as another command.
    Where that ends a command the author wrote on, the command as meant (those breaks folded) is
    kept, with a `folded-line-break` lint on the line where the shell ends it (as a `\\` followed by
    a blank is: extractor/shell_lexer.py); anything else stays as the shell reads it."""
    words = yaml_nodes.fold_kept_breaks(value, " ")
    if words == value:
        return found
    meant = scanned(words)
    if not _placed(meant, scanned(yaml_nodes.fold_kept_breaks(laid, " \\\n"))):
        return found
    actual = {inv.line: inv for inv in found.invocations}
    rows = laid.split("\n")
    cut = False
    for inv in meant.invocations:
        ran = actual.get(inv.line)
        if ran is None or [inv.kind] != [ran.kind] or ran.end_line >= inv.end_line:
            continue
        cut = True
        after = rows[ran.end_line + 1].strip() if ran.end_line + 1 < len(rows) else ""
        inv.lints.append(
            Lint(
                "folded-line-break",
                f"the next line (`{after[:60]}`) is indented more than this one inside a YAML `>` block, so "
                "YAML keeps the line break between them (a folded block joins only lines of its own "
                "indentation): the shell ends the command on this line and runs the next one as a separate "
                "command; the options after it were assumed to be part of the command",
                ran.end_line,
            )
        )
    return meant if cut else found


def _substitute(found: ShellScan, values: dict[str, str]) -> None:
    """Fill in `$VAR`/`${VAR}` with the literal values the YAML gives those variables, in the
    arguments and env assignments of every command found."""
    if not values:
        return
    for inv in found.invocations:
        inv.args = [new for word in inv.args for new in _expand(word, values, split=True)]
        inv.env_words = [_expand(word, values, split=False)[0] for word in inv.env_words]
        for word in inv.env_words:
            name, _, value = word.text.partition("=")
            if name in inv.env:
                inv.env[name] = value


def _expand(word: Word, values: dict[str, str], split: bool) -> list[Word]:
    """`word` with the expansions of known variables replaced by their values; an unquoted word that
    is just `$VAR` becomes the value's words, as bash splits it."""
    text, kept, pos = word.text, [], 0
    for exp in word.expansions:
        m = _SHELL_VAR.match(exp)
        name = m and (m[1] or m[2])
        at = text.find(exp, pos)
        if not name or name not in values or at < 0:
            kept.append(exp)
            pos = at + len(exp) if at >= 0 else pos
            continue
        if split and not word.quoted and text == exp:
            return [Word(part, word.line) for part in values[name].split()]
        text = text[:at] + values[name] + text[at + len(exp) :]
        pos = at + len(values[name])
    return [Word(text, word.line, kept, word.quoted)]
