"""What the vLLM production stack's Helm chart (github.com/vllm-project/production-stack, `helm/`)
puts on the `vllm serve` command line for one `servingEngineSpec.modelSpec[]` entry of a values
document: the key -> flag tables, the values as Go templates print them, and the two templates
that compose them (`deployment-vllm-multi.yaml`, and `ray-cluster.yaml` for an entry whose
`raySpec.enabled` is true). Mirrored from the chart at production-stack a6c01db; when the chart
changes, this file is the one place to change.

extractor/helm_values.py walks a values document and makes snippets of what this composes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

import yaml

from driftmatrix.extractor import yaml_nodes

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
BOOL_TAG = "tag:yaml.org,2002:bool"


@dataclass(frozen=True)
class Rule:
    """One template `if` that adds a flag for one key.

    `test`: `set` — `hasKey`: the flag and the value whenever the key is there; `truthy` — `if`: the
    flag and the value when the value is truthy in Go (not false, 0, "", empty or null); `switch` —
    `if`: the flag alone when truthy; `both` — `hasKey`: the flag when truthy, else its `--no-` form;
    `either` — `if`: the flag when truthy, else (absent too) its `--no-` form; `each` — `range`: every
    item of the list, as a string."""

    key: str
    flag: str
    test: str


@dataclass(frozen=True)
class Template:
    """One chart template's way of composing the command."""

    file: str
    head: tuple[str, ...]
    """Fixed arguments after the model and the `--host`/`--port` pair."""
    model_spec: tuple[Rule, ...]
    """Rules on the entry's own keys, before `vllmConfig`'s."""
    vllm_config: tuple[Rule, ...]
    chat_template_dir: str
    """What the template puts before `chatTemplate`'s value (the chart mounts templates there)."""


_MODEL_SPEC = (
    Rule("enableLoRA", "--enable-lora", "switch"),
    Rule("enableTool", "--enable-auto-tool-choice", "switch"),
    Rule("toolCallParser", "--tool-call-parser", "truthy"),
)

# helm/templates/deployment-vllm-multi.yaml, lines 148-196 (the spellings are the template's own:
# `--gpu_memory_utilization`, `--max_loras`; vLLM reads `_` as `-`).
DEPLOYMENT = Template(
    file="helm/templates/deployment-vllm-multi.yaml",
    head=(),
    model_spec=_MODEL_SPEC,
    vllm_config=(
        Rule("enableChunkedPrefill", "--enable-chunked-prefill", "both"),
        Rule("enablePrefixCaching", "--enable-prefix-caching", "either"),
        Rule("maxModelLen", "--max-model-len", "set"),
        Rule("dtype", "--dtype", "set"),
        Rule("tensorParallelSize", "--tensor-parallel-size", "set"),
        Rule("maxNumSeqs", "--max-num-seqs", "set"),
        Rule("gpuMemoryUtilization", "--gpu_memory_utilization", "set"),
        Rule("maxLoras", "--max_loras", "set"),
        Rule("runner", "--runner", "set"),
        Rule("convert", "--convert", "set"),
        Rule("extraArgs", "", "each"),
    ),
    chat_template_dir="/templates/",
)

# helm/templates/ray-cluster.yaml, lines 669-752 (the `vllm-entrypoint.sh` ConfigMap): no `--no-`
# form for prefix caching, pipelineParallelSize read, no runner/convert, dashes throughout.
RAY = Template(
    file="helm/templates/ray-cluster.yaml",
    head=("--distributed-executor-backend", "ray"),
    model_spec=_MODEL_SPEC,
    vllm_config=(
        Rule("enableChunkedPrefill", "--enable-chunked-prefill", "both"),
        Rule("enablePrefixCaching", "--enable-prefix-caching", "switch"),
        Rule("maxModelLen", "--max-model-len", "set"),
        Rule("dtype", "--dtype", "set"),
        Rule("tensorParallelSize", "--tensor-parallel-size", "set"),
        Rule("pipelineParallelSize", "--pipeline-parallel-size", "set"),
        Rule("maxNumSeqs", "--max-num-seqs", "set"),
        Rule("gpuMemoryUtilization", "--gpu-memory-utilization", "set"),
        Rule("maxLoras", "--max-loras", "set"),
        Rule("extraArgs", "", "each"),
    ),
    chat_template_dir="",
)

# vllmConfig keys the templates read for something other than a flag (the env, the LMCache connector).
VLLM_CONFIG_NOT_FLAGS = frozenset({"v0", "v1", "prometheusMultiprocDir"})

# modelSpec keys the chart's templates (and _helpers.tpl's resources) read for the deployment, not
# the command: not reported.
MODEL_SPEC_NOT_FLAGS = frozenset(
    {
        "affinity",
        "annotations",
        "chatTemplateConfigMap",
        "enabled",
        "env",
        "envFromSecret",
        "extraVolumeMounts",
        "extraVolumes",
        "hf_token",
        "imagePullSecret",
        "initContainer",
        "keda",
        "labels",
        "name",
        "nodeName",
        "nodeSelectorTerms",
        "pdb",
        "podAnnotations",
        "podLabels",
        "priorityClassName",
        "pvcAccessMode",
        "pvcAnnotations",
        "pvcExistingClaimName",
        "pvcLabels",
        "pvcMatchLabels",
        "pvcStorage",
        "raySpec",
        "replicaCount",
        "repository",
        "resources",
        "runtimeClassName",
        "serviceAccountName",
        "serviceAnnotations",
        "shmSize",
        "storageClass",
        "tag",
        "tolerations",
        "tolerationsPolicy",
        "modelURL",
        "requestCPU",
        "requestMemory",
        "requestGPU",
        "requestGPUType",
        "requestGPUMem",
        "requestGPUMemPercentage",
        "requestGPUCores",
        "limitCPU",
        "limitMemory",
        "limitGPUMem",
        "limitGPUMemPercentage",
        "limitGPUCores",
        # read for the command, below the tables: the LMCache connector, the chat template, the revision
        "vllmConfig",
        "lmcacheConfig",
        "chatTemplate",
        "modelRevision",
    }
)


def template_for(entry: yaml.Node) -> Template:
    """`raySpec.enabled`: the chart renders the entry with ray-cluster.yaml instead."""
    return RAY if truthy(yaml_nodes.child(entry, "raySpec", "enabled")) else DEPLOYMENT


def truthy(node: yaml.Node | None) -> bool:
    """Go templates' truth (`if`): false, 0, "", null and empty collections are false; the string
    "false" is true."""
    if node is None:
        return False
    if not isinstance(node, yaml.ScalarNode):
        return bool(node.value)
    if node.tag == yaml_nodes.NULL_TAG:
        return False
    if node.tag == BOOL_TAG:
        return bool(yaml.load(node.value, Loader=yaml_nodes.Loader))
    if node.tag in (_INT, _FLOAT):
        return _number(node) != 0
    return node.value != ""


def go_string(node: yaml.Node | None) -> str | None:
    """How a template prints a scalar (`{{ x }}`, `{{ x | quote }}`, fmt's %v): Helm reads every
    number of a values file as a float64, so `4096` prints `4096` and `1000000` prints `1e+06`.
    None: null, a list or a mapping (nothing a flag can take)."""
    if not isinstance(node, yaml.ScalarNode) or node.tag == yaml_nodes.NULL_TAG:
        return None
    if node.tag == BOOL_TAG:
        return "true" if truthy(node) else "false"
    if node.tag in (_INT, _FLOAT):
        return go_float(_number(node))
    return node.value


def _number(node: yaml.ScalarNode) -> float:
    try:
        return float(yaml.load(node.value, Loader=yaml_nodes.Loader))
    except (yaml.YAMLError, TypeError, ValueError, OverflowError):
        return math.nan


def go_float(x: float) -> str:
    """Go's `%v` of a float64: the shortest digits, in `e` notation when the exponent is below -4 or
    at least 6 (strconv's 'g' with the shortest precision), the exponent of two digits at least."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if math.copysign(1, x) < 0 else "0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    text = "".join(map(str, digits))
    power = len(text) + exponent - 1
    lead = "-" if sign else ""
    if power < -4 or power >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{lead}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if power < 0:
        return f"{lead}0.{'0' * (-power - 1)}{text}"
    whole = text[: power + 1].ljust(power + 1, "0")
    rest = text[power + 1 :]
    return f"{lead}{whole}.{rest}" if rest else f"{lead}{whole}"


def kv_transfer_config(template: Template, entry: yaml.Node) -> str | None:
    """The `--kv-transfer-config` value the template gives an entry whose `lmcacheConfig.enabled` is
    true (deployment-vllm-multi.yaml lines 204-217, ray-cluster.yaml 740-751), else None."""
    lmcache = yaml_nodes.child(entry, "lmcacheConfig")
    if not truthy(lmcache) or not truthy(yaml_nodes.child(lmcache, "enabled")):
        return None
    fields = yaml_nodes.mapping(lmcache)
    config = yaml_nodes.mapping(yaml_nodes.child(entry, "vllmConfig"))
    if template is RAY:
        v1 = "v1" in config and go_string(config["v1"]) == "1"
        connector = "LMCacheConnectorV1" if v1 else "LMCacheConnector"
        return f'{{"kv_connector":"{connector}","kv_role":"kv_both"}}'
    role = go_string(fields["kvRole"]) if truthy(fields.get("kvRole")) else "kv_both"
    if "enablePD" in fields:
        port = go_string(fields.get("nixlRole"))
        port = "" if port is None else f'"{port}"'  # `| quote` prints nothing for null: the JSON breaks, as deployed
        return (
            f'{{"kv_connector":"LMCacheConnectorV1","kv_role":"{role}","kv_connector_extra_config":'
            f'{{"discard_partial_chunks": false, "lmcache_rpc_port": {port}}}}}'
        )
    if "v0" in config and go_string(config["v0"]) == "1":
        return f'{{"kv_connector":"LMCacheConnector","kv_role":"{role}"}}'
    return f'{{"kv_connector":"LMCacheConnectorV1","kv_role":"{role}"}}'
