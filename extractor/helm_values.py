"""Commands of the vLLM production stack's Helm values: each `servingEngineSpec.modelSpec[]` entry
of a values document (`helm install -f values.yaml`) is deployed as a container running
`vllm serve <modelURL> --host 0.0.0.0 --port 8000 …`, composed by the chart's template from the
entry's keys (extractor/helm_chart.py holds the key -> flag tables). Nothing of it is written as a
command on the page, so nothing else in the extractor sees it: a removed option in
`vllmConfig.extraArgs` (`["--swap-space", 0]`) would be drift nobody sees.

Each entry is a `docker` snippet: the chart runs image `repository:tag` with that command (its
arguments are those after `vllm serve`), at the entry's first line, its text the entry as written;
`compose` gives each argument's own line. Keys the chart does not put on the command line are
diagnostics, never dropped silently. Also `from_yaml_file`: a whole YAML file of a repository."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import yaml

from driftmatrix.extractor import yaml_nodes
from driftmatrix.extractor.helm_chart import (
    BOOL_TAG,
    MODEL_SPEC_NOT_FLAGS,
    VLLM_CONFIG_NOT_FLAGS,
    Rule,
    Template,
    go_string,
    kv_transfer_config,
    template_for,
    truthy,
)
from driftmatrix.extractor.snippet_builder import Place, build
from driftmatrix.extractor.snippet_record import Diagnostic, Snippet
from driftmatrix.extractor.yaml_commands import from_yaml_block

_K8S_NAME_VALUE = ("name", "value")


@dataclass
class Arg:
    text: str
    line: int
    """0-based line of the values text whose key or item gave this argument."""


@dataclass
class Composed:
    """What the chart runs for one modelSpec entry."""

    entry: yaml.MappingNode
    index: int
    template: Template
    args: list[Arg] = field(default_factory=list)
    """The arguments after `vllm serve`, in the template's order."""
    image: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[str, str, str, int]] = field(default_factory=list)
    """(severity, code, message, 0-based line) of what could not go on the command line."""

    def add(self, node: yaml.Node, *words: str) -> None:
        self.args += [Arg(w, node.start_mark.line) for w in words]

    def problem(self, severity: str, code: str, node: yaml.Node, message: str) -> None:
        self.problems.append((severity, code, message, node.start_mark.line))


def is_helm_values(text: str) -> bool:
    """Cheap test: could this YAML be a values document of the chart (read before parsing)."""
    return "servingEngineSpec" in text and "modelSpec" in text


def from_helm_values(text: str, place: Place) -> tuple[list[Snippet], list[Diagnostic]]:
    """The commands the chart runs for the values document(s) in `text` (first line: `place.line`)."""
    roots, failed = _parse(text, place)
    if failed:
        return [], failed
    lines = text.split("\n")
    snippets: list[Snippet] = []
    diagnostics: list[Diagnostic] = []
    for composed in (c for root in roots for c in compose(root)):
        for severity, code, message, line in composed.problems:
            diagnostics.append(
                Diagnostic(severity, code, message, place.corpus, place.version, place.file, place.line + line)
            )
        if composed.args:
            snippets.append(_snippet(composed, lines, place))
    return snippets, diagnostics


def _parse(text: str, place: Place) -> tuple[list[yaml.Node], list[Diagnostic]]:
    """The documents' roots (bounded: extractor/yaml_nodes.py), or the diagnostic saying why none."""
    try:
        return yaml_nodes.compose_all(text), []
    except yaml_nodes.YAMLTooLarge as err:
        return [], [
            Diagnostic(
                "error",
                "yaml-alias-expansion",
                f"Helm values: {err}",
                place.corpus,
                place.version,
                place.file,
                place.line,
            )
        ]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        return [], [
            Diagnostic(
                "warning",
                "yaml-error",
                f"Helm values do not parse: {err}".splitlines()[0],
                place.corpus,
                place.version,
                place.file,
                place.line + (mark.line if mark else 0),
            )
        ]


def compose(root: yaml.Node) -> list[Composed]:
    """What the chart runs for each modelSpec entry of one values document; an entry the chart does
    not deploy (`enabled: false`, `enableEngine: false`) has no arguments and says why."""
    engine = yaml_nodes.child(root, "servingEngineSpec")
    specs = yaml_nodes.child(engine, "modelSpec")
    if not isinstance(specs, yaml.SequenceNode):
        return []
    out = []
    for index, entry in enumerate(specs.value):
        composed = Composed(entry, index, template_for(entry))
        out.append(composed)
        if not isinstance(entry, yaml.MappingNode):
            composed.problem("warning", "helm-model-spec", entry, f"modelSpec[{index}] is not a mapping: skipped")
        elif _deployed(engine, entry, composed):
            _compose_entry(engine, entry, composed)
    return out


def _deployed(engine: yaml.Node, entry: yaml.MappingNode, composed: Composed) -> bool:
    """deployment-vllm-multi.yaml lines 1-3: `if .Values.servingEngineSpec.enableEngine` (true in
    the chart's own values.yaml) and `if ne $modelSpec.enabled false`."""
    enable = yaml_nodes.child(engine, "enableEngine")
    if enable is not None and not truthy(enable):
        composed.problem(
            "info",
            "helm-model-not-deployed",
            enable,
            f"modelSpec[{composed.index}]: `enableEngine` is false: the chart deploys no engine",
        )
        return False
    enabled = yaml_nodes.child(entry, "enabled")
    if isinstance(enabled, yaml.ScalarNode) and enabled.tag == BOOL_TAG and not truthy(enabled):
        composed.problem(
            "info",
            "helm-model-not-deployed",
            enabled,
            f"modelSpec[{composed.index}] has `enabled: false`: the chart does not deploy it",
        )
        return False
    return True


def _compose_entry(engine: yaml.Node, entry: yaml.MappingNode, composed: Composed) -> None:
    """deployment-vllm-multi.yaml lines 121-221 (ray-cluster.yaml lines 669-752), in their order."""
    fields = yaml_nodes.mapping(entry)
    composed.image = _image(fields, entry, composed)
    model = fields.get("modelURL")
    if go_string(model) is None:
        composed.problem(
            "warning",
            "helm-no-model",
            model or entry,
            f"modelSpec[{composed.index}] has no `modelURL`: the chart's command has an empty model",
        )
    else:
        composed.add(model, go_string(model))
    port = yaml_nodes.child(engine, "containerPort")  # helm/templates/_helpers.tpl: `default "8000"`
    composed.add(entry, "--host", "0.0.0.0")
    composed.add(port if truthy(port) else entry, "--port", go_string(port) if truthy(port) else "8000")
    composed.add(entry, *composed.template.head)
    _apply(composed.template.model_spec, fields, entry, composed)
    config = fields.get("vllmConfig")
    if truthy(config):  # `with $modelSpec.vllmConfig`: nothing of it (no `--no-…` either) when empty
        _vllm_config(config, composed)
    _apply((Rule("modelRevision", "--revision", "truthy"),), fields, entry, composed)
    kv = kv_transfer_config(composed.template, entry)
    if kv is not None:
        composed.add(fields["lmcacheConfig"], "--kv-transfer-config", kv)
    template = fields.get("chatTemplate")
    if truthy(template) and go_string(template) is not None:
        composed.add(template, "--chat-template", composed.template.chat_template_dir + go_string(template))
    composed.env = _env(engine, fields)
    _unknown_model_spec_keys(entry, composed)


def _image(fields: dict[str, yaml.Node], entry: yaml.Node, composed: Composed) -> str | None:
    """`"{{ required … repository }}:{{ required … tag }}"`: without either, `helm install` fails."""
    repository, tag = go_string(fields.get("repository")), go_string(fields.get("tag"))
    if repository and tag:
        return f"{repository}:{tag}"
    composed.problem(
        "warning",
        "helm-no-image",
        entry,
        f"modelSpec[{composed.index}] lacks `repository` or `tag`: the chart refuses to render it",
    )
    return None


def _vllm_config(config: yaml.Node, composed: Composed) -> None:
    if not isinstance(config, yaml.MappingNode):
        composed.problem("warning", "helm-value", config, f"modelSpec[{composed.index}].vllmConfig is not a mapping")
        return
    fields = yaml_nodes.mapping(config)
    _apply(composed.template.vllm_config, fields, config, composed)
    known = {rule.key for rule in composed.template.vllm_config} | VLLM_CONFIG_NOT_FLAGS
    for key, _value in config.value:
        name = getattr(key, "value", None)
        if name not in known:
            composed.problem(
                "warning",
                "helm-key-not-on-command-line",
                key,
                f"modelSpec[{composed.index}].vllmConfig.{name}: the chart's template "
                f"({composed.template.file}) has no flag for this key, so the deployed command "
                "does not have it (`extraArgs` passes other options)",
            )
    if "v0" in fields and go_string(fields["v0"]) == "1":  # the template's env: vLLM's V0 engine
        composed.env["VLLM_USE_V1"] = "0"


def _apply(rules: tuple[Rule, ...], fields: dict[str, yaml.Node], where: yaml.Node, composed: Composed) -> None:
    """The flags a table's rules give for the keys of one mapping (`where`: its node, the line of a
    flag that the absence of its key gives)."""
    for rule in rules:
        node = fields.get(rule.key)
        on = truthy(node)
        no_flag = "--no-" + rule.flag.removeprefix("--")
        if rule.test == "either":
            composed.add(node if node is not None else where, rule.flag if on else no_flag)
        elif node is None:
            continue
        elif rule.test == "both":
            composed.add(node, rule.flag if on else no_flag)
        elif rule.test == "switch" and on:
            composed.add(node, rule.flag)
        elif rule.test == "each":
            _each(rule, node, composed)
        elif rule.test == "set" or (rule.test == "truthy" and on):
            _flag_value(rule, node, composed)


def _flag_value(rule: Rule, node: yaml.Node, composed: Composed) -> None:
    value = go_string(node)
    if value is None:
        composed.problem(
            "warning",
            "helm-value",
            node,
            f"modelSpec[{composed.index}]: `{rule.key}` is not a "
            f"string or number: the chart renders `{rule.flag}` with no usable value; left out",
        )
        return
    composed.add(node, rule.flag, value)


def _each(rule: Rule, node: yaml.Node, composed: Composed) -> None:
    """`range .extraArgs` + `{{ . | quote }}`: each item as a string (a YAML `0` is "0")."""
    if not truthy(node):
        return
    if not isinstance(node, yaml.SequenceNode):
        composed.problem(
            "warning",
            "helm-value",
            node,
            f"modelSpec[{composed.index}]: `{rule.key}` is not a list: the chart cannot range over it; left out",
        )
        return
    for item in node.value:
        value = go_string(item)
        if value is None:
            composed.problem(
                "warning",
                "helm-value",
                item,
                f"modelSpec[{composed.index}]: an item of `{rule.key}` is not a string or number; left out",
            )
        else:
            composed.add(item, value)


def _unknown_model_spec_keys(entry: yaml.MappingNode, composed: Composed) -> None:
    """A key the chart reads only under `vllmConfig` (`extraArgs`, `tensorParallelSize`) written on the
    entry itself is ignored when deployed: a warning; any other key the chart does not read: info."""
    known = MODEL_SPEC_NOT_FLAGS | {rule.key for rule in composed.template.model_spec}
    config_keys = {rule.key for rule in composed.template.vllm_config}
    for key, _ in entry.value:
        name = getattr(key, "value", None)
        if name in config_keys:
            composed.problem(
                "warning",
                "helm-key-misplaced",
                key,
                f"modelSpec[{composed.index}].{name}: the chart reads `{name}` only under "
                f"`vllmConfig`: here it is ignored, and the deployed command does not have it",
            )
        elif name not in known:
            composed.problem(
                "info",
                "helm-key-unknown",
                key,
                f"modelSpec[{composed.index}].{name}: not a key the chart reads (for the vLLM "
                "command or the deployment): it has no effect",
            )


def _env(engine: yaml.Node, fields: dict[str, yaml.Node]) -> dict[str, str]:
    """What the values set in the container's env (`servingEngineSpec.env`, then the entry's `env`,
    as the template appends them; `valueFrom` secrets have no value here). The chart's own fixed
    variables (PYTHONHASHSEED, HF_HOME, LMCACHE_*) are not recorded: they change no argument."""
    out: dict[str, str] = {}
    for node in (yaml_nodes.child(engine, "env"), fields.get("env")):
        items = node.value if isinstance(node, yaml.SequenceNode) else []
        for item in items:
            name, value = (go_string(yaml_nodes.child(item, k)) for k in _K8S_NAME_VALUE)
            if name and value is not None:
                out[name] = value
    return out


def _snippet(composed: Composed, lines: list[str], place: Place) -> Snippet:
    entry = composed.entry
    first, last = entry.start_mark.line, _last_line(entry, lines)
    source = place.source(first, "\n".join(lines[first : last + 1]))
    ray = " (ray)" if composed.template.file.endswith("ray-cluster.yaml") else ""
    source.context = f"helm:modelSpec[{composed.index}]{ray}"
    argv = [a.text for a in composed.args]
    if composed.image is None:
        return build("serve", argv, composed.env, source, placeholder_models=place.placeholder_models)
    return build(
        "docker",
        argv,
        composed.env,
        source,
        image=composed.image,
        docker_options=[],
        placeholder_models=place.placeholder_models,
    )


def _last_line(node: yaml.Node, lines: list[str]) -> int:
    """The last line holding the node's text (its end mark sits where the next token starts)."""
    end = node.end_mark.line - (1 if node.end_mark.column == 0 else 0)
    end = min(end, len(lines) - 1)
    while end > node.start_mark.line and (not lines[end].strip() or lines[end].lstrip().startswith("#")):
        end -= 1
    return end


# --- whole YAML files of a repository ---------------------------------------------------------


def from_yaml_file(text: str, place: Place) -> tuple[list[Snippet], list[Diagnostic]]:
    """The commands of one YAML file of a repository (not a Markdown fence): a Helm values file ->
    from_helm_values; a Kubernetes manifest or any YAML holding `vllm serve` (container
    `command`/`args`, scripts) -> extractor/yaml_commands.py.

    Not read: files under a dot-folder (`.buildkite/`, `.github/`, `.jenkins/`: CI configuration,
    not instructions to readers) and Helm templates (`{{ .Values… }}`: not YAML until rendered; their
    commands are composed from the values files, read here)."""
    if is_ci_path(place.file):
        return [], []
    skipped: list[Diagnostic] = []
    if is_helm_template(text):
        text, skipped = _without_templates(text, place)
        if not text.strip():  # a template as a whole (every document): nothing to say
            return [], []
    if is_helm_values(text):
        snippets, diagnostics = from_helm_values(text, place)
        if snippets or diagnostics:
            return snippets, skipped + diagnostics
    snippets, diagnostics = from_yaml_block(_without_schemas(text), place)
    return snippets, skipped + diagnostics


_DOCUMENT_START = re.compile(r"^(?:---|\.\.\.)(?:[ \t]|$)")


def _without_templates(text: str, place: Place) -> tuple[str, list[Diagnostic]]:
    """The text with each document that is a template blanked (its lines kept empty, so the others keep
    their numbers), and a diagnostic per such document at its first line (wanted only when another
    document is left to read). A multi-document manifest whose
    ConfigMap holds a chat template (`{{ bos_token }}` lines) is not a Helm template as a whole: its
    Deployment is still read."""
    lines = text.split("\n")
    starts = [0] + [n for n, line in enumerate(lines) if n and _DOCUMENT_START.match(line)]
    diagnostics = []
    for first, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        document = "\n".join(lines[first:end])
        if not is_helm_template(document):
            continue
        action = first + document.count("\n", 0, _TEMPLATE_ACTION.search(document).start())
        head = first + 1 if first and lines[first].strip() in ("---", "...") else first  # its first line after `---`
        lines[first:end] = [""] * (end - first)
        diagnostics.append(
            Diagnostic(
                "info",
                "yaml-template-document",
                f"the YAML document at line {place.line + head} is a template (line {place.line + action} "
                "starts with `{{`: a Helm chart's template, or a Jinja template such as a chat template held "
                "in a ConfigMap): not read; the file's other documents are",
                place.corpus,
                place.version,
                place.file,
                place.line + head,
            )
        )
    return "\n".join(lines), diagnostics


def _without_schemas(text: str) -> str:
    """The text with its CustomResourceDefinition documents blanked (lines kept, so the rest keep
    theirs): a CRD's schema describes fields in prose ("Extra arguments for vllm serve"), which
    read as a script would be a command nobody wrote. A text that does not parse is left as it is
    (from_yaml_block reports it)."""
    if "CustomResourceDefinition" not in text:
        return text
    try:
        roots = yaml_nodes.compose_all(text)
    except yaml.YAMLError:
        return text
    lines = text.split("\n")
    for root in roots:
        if go_string(yaml_nodes.child(root, "kind")) == "CustomResourceDefinition":
            for n in range(root.start_mark.line, _last_line(root, lines) + 1):
                lines[n] = ""
    return "\n".join(lines)


def from_yaml_fence(text: str, place: Place) -> tuple[list[Snippet], list[Diagnostic]]:
    """A ```yaml block of a page: Helm values -> from_helm_values, anything else -> from_yaml_block."""
    if is_helm_values(text):
        snippets, diagnostics = from_helm_values(text, place)
        if snippets or diagnostics:
            return snippets, diagnostics
    return from_yaml_block(text, place)


def is_ci_path(rel: str) -> bool:
    """A path under a dot-folder (`.buildkite/pipeline.yml`, `.github/workflows/…`)."""
    return any(part.startswith(".") and part not in (".", "..") for part in PurePosixPath(rel).parts[:-1])


_TEMPLATE_ACTION = re.compile(r"(?m)^[ \t]*\{\{")


def is_helm_template(text: str) -> bool:
    """A chart template has lines that are template actions (`{{- if .Values… }}`); a values file has
    `{{` only inside strings (`url: http://{{ .Release.Name }}…`) or comments."""
    return "{{" in text and _TEMPLATE_ACTION.search(text) is not None
