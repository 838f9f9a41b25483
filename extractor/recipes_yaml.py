"""`models/<org>/<repo>.yaml` of the vLLM recipes: the commands its page composes.

The recipes site builds `vllm serve <model_id> <base_args> <feature args…>`; features
not listed in `opt_in_features` are on by default. We emit the default command, the
default command plus each opt-in feature (each mode of a multi-mode feature), and each
non-default variant (its checkpoint and `extra_args`). Hardware and strategy overrides
are deployment-specific and left out. The `guide:` Markdown is read like a docs page.

An omni recipe (`meta.tasks` lists `omni`) is served by vLLM-Omni: the site injects `--omni`
after the model (its recipes' own rule: "The `--omni` flag is auto-injected, so don't add it to
`model.base_args`"), and each `omni.tasks` entry with its own checkpoint or `extra_args` is a
command of its own. Without the flag, such a command would be judged by plain vLLM, which does not
know vLLM-Omni's options (`--init-timeout`): a false FAIL.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import yaml

from driftmatrix.extractor import yaml_nodes
from driftmatrix.extractor.bounds import MAX_RECIPE_WORDS
from driftmatrix.extractor.snippet_builder import Place, build, shell_text
from driftmatrix.extractor.snippet_record import Diagnostic, Snippet

RECIPES_SITE = "https://recipes.vllm.ai"


class Guide(NamedTuple):
    """A recipe's `guide:` Markdown, read like a docs page."""

    text: str
    line: int
    """0-based line of the YAML file where the Markdown starts."""
    claim: dict[str, Any]
    """The recipe's own version claim (`version_claim` of the model)."""
    title: str = ""
    """The recipe's title (`recipe_title`): the guide's commands are on the recipe's page."""
    runbooks: tuple[tuple[str, str, int], ...] = ()
    """(preset name, Markdown, 0-based line where it starts) of each tuned preset's `runbook:`: the
    steps and commands the recipes page shows for that preset, read like the guide."""


class RecipeError(ValueError):
    """The recipe does not have the shape the recipes site expects."""


def _str_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float, bool)) for v in value):
        raise RecipeError(f"{where} must be a list of strings")
    out = []
    for v in value:
        text = str(v).lower() if isinstance(v, bool) else str(v)
        # The site renders args space-joined, so an item "--max-model-len auto" reaches the
        # reader's shell as a flag and its value: keep that reading (a JSON item stays whole).
        m = _FLAG_AND_VALUE.match(text)
        out += [m[1], m[2]] if m else [text]
    return out


_FLAG_AND_VALUE = re.compile(r"^(--[A-Za-z0-9][\w.-]*)\s+([^\s'\"{\[]+)$")


def _str_dict(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, (str, int, float, bool)) for v in value.values()):
        raise RecipeError(f"{where} must map names to strings")
    return {str(k): str(v) for k, v in value.items()}


def _path_line(root: yaml.Node, path: tuple[str, ...], keys: dict[int, dict[str, tuple]] | None = None) -> int:
    """0-based line of the node at `path`; where the path ends early, the line of the last key that is
    there (a feature with only per-hardware args is at its own key, not at the file's line 1). `keys`:
    each mapping's entries by key, made once for all the paths asked (a scan of the mapping per path
    cost features x features)."""
    keys = {} if keys is None else keys
    node, line = root, 0
    for i, key in enumerate(path):
        entry = _entries(node, keys).get(key) if isinstance(node, yaml.MappingNode) else None
        if isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            entry = (node.value[int(key)], node.value[int(key)])  # a list entry (`omni.tasks.1`) is at its own line
        if entry is None:
            return line
        key_node, node = entry
        line = node.start_mark.line if i == len(path) - 1 else key_node.start_mark.line
    return line


def _entries(node: yaml.MappingNode, keys: dict[int, dict[str, tuple]]) -> dict[str, tuple]:
    """A mapping's (key node, value node) by key text, the first of a repeated key."""
    if id(node) not in keys:
        found: dict[str, tuple] = {}
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                found.setdefault(k.value, (k, v))
        keys[id(node)] = found
    return keys[id(node)]


def _modes(name: str, feature: dict[str, Any]) -> list[tuple[str | None, list[str], list[str] | None, str]]:
    """(mode, args, variants it is limited to, yaml path) for one feature."""
    if isinstance(feature.get("modes"), dict):
        out = []
        for mode, spec in feature["modes"].items():
            spec = spec if isinstance(spec, dict) else {}
            limited = spec.get("variants") if isinstance(spec.get("variants"), list) else None
            path = f"features.{name}.modes.{mode}.args"
            out.append((str(mode), _str_list(spec.get("args"), path), limited, path))
        default = feature.get("default_mode")
        out.sort(key=lambda m: m[0] != default)  # the default mode first
        return out
    return [(None, _str_list(feature.get("args"), f"features.{name}.args"), None, f"features.{name}.args")]


def from_recipe(text: str, place: Place) -> tuple[list[Snippet], list[Diagnostic], Guide | None]:
    """(snippets, diagnostics, the guide) of a recipe file. Each command's `recipe` record
    carries the versions the recipe claims for it (`min_vllm_version`, `nightly_required`: its
    variant's own, else the model's); the guide carries the model's."""
    try:
        root, data = yaml_nodes.compose_and_load(text)
    except yaml_nodes.YAMLTooLarge as err:
        return (
            [],
            [
                Diagnostic(
                    "error",
                    "yaml-alias-expansion",
                    f"recipe YAML: {err}",
                    place.corpus,
                    place.version,
                    place.file,
                    None,
                )
            ],
            None,
        )
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        return (
            [],
            [
                Diagnostic(
                    "error",
                    "yaml-error",
                    f"recipe YAML does not parse: {str(err).splitlines()[0]}",
                    place.corpus,
                    place.version,
                    place.file,
                    mark.line + 1 if mark else None,
                )
            ],
            None,
        )
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict) or not data["model"].get("model_id"):
        return (
            [],
            [
                Diagnostic(
                    "warning",
                    "not-a-recipe",
                    "no model.model_id: not a recipe, skipped",
                    place.corpus,
                    place.version,
                    place.file,
                    1,
                )
            ],
            None,
        )
    title = recipe_title(data)
    try:
        snippets = _commands(root, data, place.at(place.line, title=title))
    except RecipeError as err:
        return [], [Diagnostic("error", "recipe-shape", str(err), place.corpus, place.version, place.file, None)], None
    node = yaml_nodes.child(root, "guide")
    runbooks = _runbooks(root)
    guide = (
        Guide(
            node.value if isinstance(node, yaml.ScalarNode) else "",
            yaml_nodes.scalar_line(node) if isinstance(node, yaml.ScalarNode) else 0,
            version_claim(data["model"], None),
            title,
            runbooks,
        )
        if isinstance(node, yaml.ScalarNode) or runbooks
        else None
    )
    return snippets, _presets_not_composed(root, place), guide


def _presets_not_composed(root: yaml.Node, place: Place) -> list[Diagnostic]:
    """Tuned `presets:` are deltas the recipes site applies to the command it builds for one GPU,
    serving strategy (GPU and node counts) and feature selection; that builder's hardware and
    strategy rules are not in the recipe, so a composed command would be a guess: said, not guessed."""
    presets = yaml_nodes.child(root, "presets")
    if not isinstance(presets, yaml.MappingNode) or not presets.value:
        return []
    names = [key.value for key, _ in presets.value if isinstance(key, yaml.ScalarNode)]
    return [
        Diagnostic(
            "warning",
            "presets-not-composed",
            f"{len(names)} tuned preset(s) ({', '.join(names[:4])}{', …' if len(names) > 4 else ''}): "
            "their commands are composed by the recipes site from the GPU, strategy and features "
            "chosen, so they are not extracted; their runbooks are read",
            place.corpus,
            place.version,
            place.file,
            _path_line(root, ("presets", "")) + 1,
        )
    ]


def _runbooks(root: yaml.Node) -> tuple[tuple[str, str, int], ...]:
    """Each preset's `runbook:` Markdown (name, text, 0-based first line)."""
    presets = yaml_nodes.child(root, "presets")
    if not isinstance(presets, yaml.MappingNode):
        return ()
    return tuple(
        (key.value, node.value, yaml_nodes.scalar_line(node))
        for key, spec in presets.value
        if isinstance(key, yaml.ScalarNode)
        for node in [yaml_nodes.child(spec, "runbook")]
        if isinstance(node, yaml.ScalarNode)
    )


def _one_line(value: Any) -> str:
    return " ".join(str(value).split()) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""


def recipe_title(data: dict[str, Any]) -> str:
    """What the recipes site calls the recipe: `meta.title`, else the model id."""
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    return _one_line(meta.get("title")) or _one_line(data["model"]["model_id"])


def _label(spec: Any, name: str, capitalize: bool = True) -> str:
    """A feature's, mode's or variant's name as the recipes site shows it: its `label`, else its key
    in words (`spec_decoding` -> `Spec decoding`; a variant's key as it is: `nvfp4`)."""
    label = _one_line(spec.get("label")) if isinstance(spec, dict) else ""
    if label or not capitalize:
        return label or _one_line(name)
    words = " ".join(str(name).replace("_", " ").split())
    return words[:1].upper() + words[1:]


def version_claim(model: dict[str, Any], variant: Any) -> dict[str, Any]:
    """The vLLM versions the recipe claims for a command: a variant's own `min_vllm_version`
    (and `nightly_required`) first, else the model's; empty when it claims none."""
    for level, own in ((variant, True), (model, False)):
        if isinstance(level, dict) and level.get("min_vllm_version"):
            return {
                "min_vllm_version": str(level["min_vllm_version"]),
                "nightly_required": bool(level.get("nightly_required", model.get("nightly_required"))),
                "variant_min": own,
            }
    return {}


OMNI_FLAG = "--omni"


def is_omni(data: dict[str, Any]) -> bool:
    """The recipe's model is served by vLLM-Omni: `meta.tasks` lists `omni` (the site's own test)."""
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    tasks = meta.get("tasks")
    return isinstance(tasks, list) and "omni" in tasks


def _omni_tasks(data: dict[str, Any]) -> list[tuple[int, str, str | None, list[str]]]:
    """(index, task id, its own checkpoint, its own `extra_args`) of each `omni.tasks` entry that
    changes the command (a bare id or an entry without either serves the default command)."""
    omni = data.get("omni") if isinstance(data.get("omni"), dict) else {}
    tasks = omni.get("tasks") if isinstance(omni.get("tasks"), list) else []
    out = []
    for i, task in enumerate(tasks):
        if not isinstance(task, dict):
            continue
        extra = _str_list(task.get("extra_args"), f"omni.tasks.{i}.extra_args")
        if task.get("model_id") or extra:
            out.append((i, str(task.get("id") or i), str(task["model_id"]) if task.get("model_id") else None, extra))
    return out


def _commands(root: yaml.Node, data: dict[str, Any], place: Place) -> list[Snippet]:
    model = data["model"]
    model_id = str(model["model_id"])
    base_args = _str_list(model.get("base_args"), "model.base_args")
    if is_omni(data) and OMNI_FLAG not in base_args:
        base_args = [OMNI_FLAG, *base_args]
    base_env = _str_dict(model.get("base_env"), "model.base_env")
    features = data.get("features") if isinstance(data.get("features"), dict) else {}
    opt_in = set(_str_list(data.get("opt_in_features"), "opt_in_features"))
    variants = data.get("variants") if isinstance(data.get("variants"), dict) else {}
    org_repo = place.file.split("models/", 1)[-1].removesuffix(".yaml")
    url = f"{RECIPES_SITE}/{org_repo}"

    default_features: list[str] = []
    default_args: list[str] = []
    for name, feature in features.items():
        if name in opt_in or not isinstance(feature, dict):
            continue
        modes = [m for m in _modes(name, feature) if m[2] is None or "default" in m[2]]
        if modes:
            default_features.append(name if modes[0][0] is None else f"{name}:{modes[0][0]}")
            default_args += modes[0][1]

    keys: dict[int, dict[str, tuple]] = {}  # the mappings' entries, indexed once for every command's line
    words = [0]

    def snippet(
        node_path: tuple[str, ...], argv: list[str], env: dict[str, str], what: dict[str, Any], heading: str = ""
    ) -> Snippet:
        words[0] += len(argv)
        if words[0] > MAX_RECIPE_WORDS:  # bounded output: extractor/bounds.py
            raise RecipeError(
                f"its commands compose more than {MAX_RECIPE_WORDS} words together (every command "
                "carries the default features' arguments): not read (bounded input)"
            )
        line = _path_line(root, node_path, keys)
        text = shell_text(argv, env)
        source = place.at(
            place.line, url=url, line_links=False, context="recipe:" + ".".join(node_path), heading=heading
        ).source(line, text)
        return build(
            "recipe",
            argv,
            env,
            source,
            placeholder_models=place.placeholder_models,
            recipe={"model_id": model_id, **what, **version_claim(model, variants.get(what["variant"]))},
        )

    out = [
        snippet(
            ("model", "model_id"),
            [model_id, *base_args, *default_args],
            base_env,
            {"variant": "default", "features": default_features},
        )
    ]
    for name in features:
        if name not in opt_in or not isinstance(features[name], dict):
            continue
        for mode, args, limited, path in _modes(name, features[name]):
            variant = "default" if limited is None or "default" in limited else str(limited[0])
            spec = variants.get(variant) if isinstance(variants.get(variant), dict) else {}
            served = str(spec.get("model_id") or model_id)
            extra = _str_list(spec.get("extra_args"), f"variants.{variant}.extra_args") if variant != "default" else []
            label = name if mode is None else f"{name}:{mode}"
            heading = _label(features[name], name)
            if mode is not None:
                heading += f" ({_label(features[name]['modes'].get(mode), mode)})"
            out.append(
                snippet(
                    tuple(path.split(".")),
                    [served, *base_args, *default_args, *extra, *args],
                    base_env,
                    {"variant": variant, "features": [*default_features, label]},
                    heading,
                )
            )
    for variant, spec in variants.items():
        if variant == "default" or not isinstance(spec, dict):
            continue
        served = str(spec.get("model_id") or model_id)
        extra = _str_list(spec.get("extra_args"), f"variants.{variant}.extra_args")
        env = base_env | _str_dict(spec.get("extra_env"), f"variants.{variant}.extra_env")
        out.append(
            snippet(
                ("variants", str(variant)),
                [served, *base_args, *default_args, *extra],
                env,
                {"variant": str(variant), "features": default_features},
                f"Variant {_label(spec, variant, capitalize=False)}",
            )
        )
    for i, task, served, extra in _omni_tasks(data) if is_omni(data) else []:
        out.append(
            snippet(
                ("omni", "tasks", str(i)),
                [served or model_id, *base_args, *default_args, *extra],
                base_env,
                {"variant": "default", "features": [*default_features, f"omni:{task}"]},
                f"Task {task}",
            )
        )
    return out
