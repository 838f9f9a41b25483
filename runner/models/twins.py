"""Twins: tiny, architecture-preserving copies of documented models.

A twin is built by `twin_build.py` inside a target's environment (with that env's own
transformers, since config layouts change between releases), cached under
`<cache>/standins/` by a hash of everything that shapes it, and marked with
`driftmatrix-standin.json` so every outcome obtained with it says `stand_in: true`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from driftmatrix import runner
from driftmatrix.common.filelock import exclusive
from driftmatrix.runner.builds.envs import TargetEnv
from driftmatrix.runner.isolation import sandbox
from driftmatrix.runner.isolation.env_policy import runner_env, without_secrets
from driftmatrix.runner.isolation.sandbox import output
from driftmatrix.runner.models import draft_kinds, supported_models, twin_cache
from driftmatrix.runner.models.resolution import TWIN_MARKER, is_local_path
from driftmatrix.runner.settings import TWIN_BUILD_S, TWIN_MAX_BYTES

BUILDER = runner.INTARGET / "twin_build.py"
BUILDER_FILES = [
    BUILDER,
    *(
        BUILDER.with_name(f"twin_{m}.py")
        for m in ("gemma4", "generic", "layout", "processor", "restate", "split", "vllm_config")
    ),
]
# families built by a script of their own (the others' twins keep their cache keys when it changes)
OWN_BUILDERS = {"mlp_speculator": BUILDER.with_name("twin_mlp_speculator.py")}
# model id families the builder knows; the first match wins. Qwen3 and Llama 3 are the dense
# decoders only: `Qwen3-8B`, `Hermes-3-Llama-3.1-8B`, not a later generation (`Qwen3.5-4B`,
# `Llama-4-…`), a mixture of experts (`Qwen3-30B-A3B`) or another kind (`Qwen3-VL-32B`,
# `Llama-3.2-11B-Vision`, `Llama-3.1-Nemotron-…`): those have architectures of their own, and a
# dense twin would judge a command by a model it does not name
FAMILIES = [
    (re.compile(r"(?i)gemma-?4.*-assistant$"), "gemma4_assistant"),
    (re.compile(r"(?i)(^|/)gemma-?4"), "gemma4"),
    (re.compile(r"(?i)(^|/)qwen3-\d+(\.\d+)?b([-_.]|$)"), "qwen3"),
    (re.compile(r"(?i)llama-?3(\.\d+)?-\d+(\.\d+)?b([-_.]|$)|(^|/)meta-llama/(meta-)?llama-[23]"), "llama"),
]
# in a dense family's id: a mixture of experts, another generation or kind
NOT_DENSE = re.compile(
    r"(?i)[-_]a\d+(\.\d+)?b([-_.]|$)|nemotron|[-_](vl|vision|omni|tts|asr|audio|embedding|reranker"
    r"|guard|next|coder-next)([-_.]|$)"
)
# a given config's `model_type` names the family directly (twins are built per model type)
MODEL_TYPES = frozenset({"qwen3", "llama", "gemma4", "gemma4_text", "gemma4_assistant", "mlp_speculator"})
# the architecture each hand-built family makes; any other architecture is built by the generic
# builder (runner/intarget/twin_generic.py) from its config's own keys
FAMILY_ARCHITECTURES = {
    "qwen3": "Qwen3ForCausalLM",
    "llama": "LlamaForCausalLM",
    "gemma4": "Gemma4ForConditionalGeneration",
    "gemma4_text": "Gemma4ForCausalLM",
    "gemma4_assistant": "Gemma4AssistantForCausalLM",
    "mlp_speculator": "MLPSpeculatorPreTrainedModel",
}


SPLIT_FLAGS = {
    "tp": "--tensor-parallel",
    "pp": "--pipeline-parallel",
    "ep": "--expert-parallel",
    "context": "--context",
}
"""The builder's option for each size a twin is fitted to (runner/argv/shape.py twin_shape): the parallel sizes
(twin_split.fit_parallel) and the command's context length (twin_split.fit_context)."""


WEIGHTLESS = ["--load-format", "dummy"]
"""What a server of a weightless twin is given: vLLM's own random initialisation of the weights."""


class TwinError(RuntimeError):
    """No twin can be built for this model here (the reason says why): a SKIP, not a FAIL."""


@dataclass
class Twin:
    """What the marker file records about a twin."""

    model_id: str
    """The documented model it stands in for."""
    dir: str
    family: str
    config_source: str
    """`config.json from <where>` or `transformers <Class>() defaults`."""
    transformers: str
    """The transformers version of the env that built it."""
    layers: int
    tokenizer_from: str | None = None
    """The twin whose tokenizer it shares (a draft shares its target's)."""
    architectures: list[str] | None = None
    layer_types: list[str] | None = None
    """The attention pattern kept from the source (sliding/full), when the family has one."""
    notes: list[str] | None = None
    """Parts not taken from the source config (defaults filled in, towers dropped)."""
    full_size: bool = False
    """The source's sizes kept (for speed measurements), not shrunk."""
    published_architecture: str | None = None
    """The real model's architecture: from its config, or vLLM's supported-models table (offline);
    None when only the model id's family was known (the legacy fallback, not validated)."""
    weightless: bool = False
    """No weights: an architecture only vLLM describes (intarget/twin_vllm_config.py); vLLM
    initialises them itself (WEIGHTLESS)."""


def family_of(model_id: str, config: dict | None = None) -> str | None:
    if config and config.get("model_type") in MODEL_TYPES:
        return config["model_type"]
    family = next((fam for pattern, fam in FAMILIES if pattern.search(model_id)), None)
    return None if family in ("qwen3", "llama") and NOT_DENSE.search(model_id) else family


def _hub_config(model_id: str, cache: Path) -> Path | None:
    """config.json from the Hugging Face hub when it can be reached (token from HF_TOKEN)."""
    if "/" not in model_id or is_local_path(model_id):
        return None
    path = cache / "configs" / model_id.replace("/", "--") / "config.json"
    if path.is_file():  # fetched before (or put there by hand)
        return path
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return None
    from driftmatrix.runner.models import hub  # the same endpoint (HF_ENDPOINT) and id rules as every other fetch

    try:
        r = httpx.get(
            f"{hub.endpoint()}/{hub.check_id(model_id)}/resolve/main/config.json",
            headers=hub.auth_headers(),
            timeout=10,
            follow_redirects=True,
        )
    except (httpx.HTTPError, hub.HubError):
        return None
    if r.status_code != 200:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(r.content)
    return path


def _local_config(model_or_config: str) -> Path | None:
    path = Path(model_or_config)
    if path.is_file() and path.name.endswith(".json"):
        return path
    if (path / "config.json").is_file():
        return path / "config.json"
    return None


@dataclass(frozen=True)
class Plan:
    """How a twin will be built: the builder family, and where its configuration comes from."""

    family: str
    config_path: Path | None
    architecture: str | None
    """The published architecture, when known."""
    table: str = ""
    """Offline: where the architecture was named (vLLM's supported-models table `... (listed: id)`, or a
    draft's speculative method)."""


def plan(
    model_or_config: str,
    cache: Path,
    config_from: str | None = None,
    docs_root: Path | None = None,
    version: str = "",
    local_paths: bool = True,
    draft: draft_kinds.Draft | None = None,
) -> Plan:
    """Where the twin's config comes from, in order: the model map (`config_from`) or MODEL_OR_CONFIG
    itself, the hub (config only), and offline the architecture vLLM's own supported-models table
    (`docs_root`: the target's docs) names for the model id, built from that architecture's
    configuration class defaults; else the model id's family (legacy); else TwinError. With
    `local_paths` False (the model was named by the docs) MODEL_OR_CONFIG is never read as a path: a
    local path named by the docs is never read from the host. `draft`: the speculative config this
    model is the draft of; a speculative head is built offline only by a builder of its own kind
    (runner/models/draft_kinds.py), never from its target's table row or id family."""
    own = model_or_config if local_paths else None
    config_path = _local_config(config_from or own or "") if (config_from or own) else None
    config_path = config_path or _hub_config(model_or_config, cache)
    if config_path is not None:
        config = json.loads(config_path.read_text())
        arch = (config.get("architectures") or [None])[0]
        return Plan(family_of(model_or_config, config) or "generic", config_path, arch)
    kind = draft.kind(model_or_config) if draft else None
    if kind and kind.builder:
        return Plan(kind.builder, None, kind.architecture, f"the speculative config's method {draft.method!r}")
    how = _offline(model_or_config, docs_root, version)
    source = (
        f"the {how.architecture} that {how.table} names"
        if how.table
        else f"a {how.family} model guessed from its id ({how.architecture})"
    )
    why = draft_kinds.wrong_type(draft, model_or_config, how.family, source)
    if why:
        raise TwinError(why)
    return how


def _offline(model_or_config: str, docs_root: Path | None, version: str) -> Plan:
    """No config to read: vLLM's supported-models table, else the id's family."""
    found = supported_models.architecture_for(model_or_config, docs_root, version)
    guessed = family_of(model_or_config)
    if found is not None:
        known = next((f for f, a in FAMILY_ARCHITECTURES.items() if a == found.architecture), None)
        table = f"{found.table} (listed: {found.listed_as})"
        if guessed and guessed.startswith("gemma4"):
            # Gemma 4's builder reads the id (model, text model, assistant) and makes the published
            # architecture; the table may list a relative, or name vLLM's own class
            named = "" if found.architecture == FAMILY_ARCHITECTURES[guessed] else f", as {found.architecture}"
            return Plan(guessed, None, FAMILY_ARCHITECTURES[guessed], f"{table}{named}")
        return Plan(known or "generic", None, found.architecture, table)
    if guessed is not None:
        return Plan(guessed, None, FAMILY_ARCHITECTURES.get(guessed))
    where = f"; not in {supported_models.TABLE} of vLLM {version}" if docs_root else ""
    raise TwinError(f"no configuration for {model_or_config}: no model-map entry, the hub not reachable{where}")


def build(
    model_or_config: str,
    env: TargetEnv,
    out: Path,
    *,
    cache: Path,
    layers: int = 2,
    tokenizer_from: str | None = None,
    seed: int = 0,
    config_from: str | None = None,
    full_size: bool = False,
    docs_root: Path | None = None,
    split: dict[str, int] | None = None,
    local_paths: bool = True,
    draft: draft_kinds.Draft | None = None,
) -> Twin:
    """Build a twin into `out` (replaced) with `env`'s Python; raise TwinError if impossible.
    `split`: the command's parallel sizes and context length (runner/argv/shape.py twin_shape), which the twin's
    heads, layers and experts must divide by (twin_split.fit_parallel) and a twin from class
    defaults is given (twin_split.fit_context).
    Where its configuration comes from: `plan()`; `draft`: the speculative config it drafts in."""
    how = plan(model_or_config, cache, config_from, docs_root, env.version, local_paths, draft)
    config_path, family = how.config_path, how.family
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        env.python,
        str(OWN_BUILDERS.get(family, BUILDER)),
        "--family",
        family,
        "--model-id",
        model_or_config,
        "--out",
        str(out),
        "--layers",
        str(layers),
        "--seed",
        str(seed),
    ]
    if config_path:
        cmd += ["--config-json", str(config_path)]
    elif family == "generic":
        cmd += ["--architecture", how.architecture]
    if tokenizer_from:
        cmd += ["--tokenizer-from", tokenizer_from]
    for key, flag in SPLIT_FLAGS.items():
        if (split or {}).get(key, 1) > 1:
            cmd += [flag, str(split[key])]
    if full_size:
        cmd.append("--full-size")
    # contained like everything that reads docs-named input: the config and tokenizer it is given are
    # data from the hub or the model map, read in a sandbox that writes only its fresh output folder
    staging = out.parent / f".{out.name}.building-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    cmd[cmd.index("--out") + 1] = str(staging)
    readable = [str(p) for p in (config_path.parent if config_path else None, tokenizer_from) if p]
    try:
        proc, events = sandbox.run(
            cmd,
            python=env.python,
            env={**runner_env(), **without_secrets(env.env)},
            kind="build",
            timeout=TWIN_BUILD_S,
            readable=readable,
            writable={str(staging): str(staging)},
            watched=[str(staging)],
            operator_env=env.env,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        raise TwinError(f"building a {family} twin took longer than {TWIN_BUILD_S:.0f} s") from None
    except sandbox.SandboxError as err:
        shutil.rmtree(staging, ignore_errors=True)
        raise TwinError(f"no {family} twin built: {err}") from None
    if proc.returncode:
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        hit = next((e for e in events if "limit" in e), None)
        why = f" (the sandbox stopped it at its {hit['limit']} limit)" if hit else ""
        raise TwinError(
            f"building a {family} twin with transformers {env.info.get('transformers')} failed{why}: {tail}"
        )
    try:
        output.accept(staging, out, TWIN_MAX_BYTES)
    except (output.UntrustedOutput, OSError) as err:
        raise TwinError(f"the {family} twin's build left something that is not a plain file: {err}") from None
    built = json.loads(proc.stdout.strip().splitlines()[-1])
    source = f"config.json from {config_path}" if config_path else built["config_source"]
    if how.table:
        source += f"; architecture {how.architecture} from {how.table}"
    twin = Twin(
        model_or_config,
        str(out),
        family,
        source,
        built["transformers"],
        len(built.get("layer_types") or []) or layers,
        tokenizer_from,
        built.get("architectures"),
        built.get("layer_types"),
        built.get("notes") or [],
        full_size,
        how.architecture,
        bool(built.get("weightless")),
    )
    (out / TWIN_MARKER).write_text(json.dumps(asdict(twin), indent=1))
    return twin


def ensure(
    model_id: str,
    env: TargetEnv,
    cache: Path,
    *,
    layers: int = 2,
    tokenizer_from: str | None = None,
    config_from: str | None = None,
    full_size: bool = False,
    docs_root: Path | None = None,
    split: dict[str, int] | None = None,
    leases: list | None = None,
    draft: draft_kinds.Draft | None = None,
) -> Twin:
    """The cached twin of `model_id` for `env`, built the first time. With `leases`, the twin is held
    in use (twin_cache.lease) until the caller closes what is appended there; building a new twin
    keeps the cache under twin_cache.limit(). `draft`: the speculative config MODEL_ID is
    the draft of (a speculative head is a checkpoint of its own kind: runner/models/draft_kinds.py).
    `split`: the command's parallel sizes the twin must divide by (none for a full-size twin: the
    published sizes already do)."""
    split = {k: v for k, v in (split or {}).items() if k in SPLIT_FLAGS}
    kind = draft.kind(model_id) if draft else None
    if kind:  # the type rule before any cached twin is reused (a twin cached before it would pass)
        plan(model_id, cache, config_from, docs_root, env.version, False, draft)
    config_path = _local_config(config_from) if config_from else None
    listed = supported_models.architecture_for(model_id, docs_root, env.version)  # no network: the key only
    key = hashlib.sha256(
        json.dumps(
            {
                "model": model_id,
                "layers": None if full_size else layers,
                "tokenizer_from": tokenizer_from,
                "full_size": full_size,
                "listed": listed.architecture if listed else None,
                # one key per parallel size that shapes the twin; a twin for -tp alone keeps its earlier key
                "tp": split["tp"] if split.get("tp", 1) > 1 and not full_size else None,
                **{k: split[k] for k in ("pp", "ep", "context") if split.get(k, 1) > 1 and not full_size},
                "config": hashlib.sha256(config_path.read_bytes()).hexdigest() if config_path else None,
                # a head built by its own kind's builder (other heads get no twin, or the twin they would
                # get anyway): absent otherwise, so existing twins keep their keys
                **(
                    {"head_builder": hashlib.sha256(OWN_BUILDERS[kind.builder].read_bytes()).hexdigest()}
                    if kind and kind.builder
                    else {}
                ),
                "transformers": env.info.get("transformers"),
                "builder": hashlib.sha256(b"".join(f.read_bytes() for f in BUILDER_FILES if f.exists())).hexdigest(),
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()[:12]
    out = cache / "standins" / f"{re.sub(r'[^A-Za-z0-9.]+', '-', model_id)[-50:]}-{key}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(Path(f"{out}.lock")):  # parallel GPU workers may want the same twin
        marker = out / TWIN_MARKER
        built = not marker.exists()
        twin = (
            build(
                model_id,
                env,
                out,
                cache=cache,
                layers=layers,
                tokenizer_from=tokenizer_from,
                config_from=config_from,
                full_size=full_size,
                docs_root=docs_root,
                split=None if full_size else split,
                local_paths=False,
                draft=draft,
            )
            if built
            else Twin(**json.loads(marker.read_text()))
        )
        if leases is not None:
            leases.append(twin_cache.lease(out))
        if built:  # only a new twin grows the cache
            twin_cache.trim(out.parent, twin_cache.limit(out.parent))
        return twin
