"""Stand-in models ("twins"): tiny, architecture-preserving copies of documented models.

A twin is built by `standin_build.py` inside a target's environment (with that env's own
transformers, since config layouts change between releases), cached under
`<cache>/standins/` by a hash of everything that shapes it, and marked with
`driftmatrix-standin.json` so every outcome obtained with it says `stand_in: true`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from runner.envs import TargetEnv
from runner.models import STANDIN_MARKER
from runner.env_policy import without_secrets
from runner.settings import STANDIN_BUILD_S

BUILDER = Path(__file__).resolve().parent / "intarget" / "standin_build.py"
BUILDER_FILES = [BUILDER, BUILDER.with_name("standin_gemma4.py")]
# model id families the builder knows; the first match wins
FAMILIES = [
    (re.compile(r"(?i)gemma-?4.*-assistant$"), "gemma4_assistant"),
    (re.compile(r"(?i)(^|/)gemma-?4"), "gemma4"),
    (re.compile(r"(?i)(^|/)qwen3"), "qwen3"),
    (re.compile(r"(?i)llama-?3|(^|/)meta-llama/"), "llama"),
]
# a given config's `model_type` names the family directly (twins are built per model type)
MODEL_TYPES = frozenset({"qwen3", "llama", "gemma4", "gemma4_text", "gemma4_assistant"})


class StandInError(RuntimeError):
    """No twin can be built for this model here (the reason says why): a SKIP, not a FAIL."""


@dataclass
class StandIn:
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


def family_of(model_id: str, config: dict | None = None) -> str | None:
    if config and config.get("model_type") in MODEL_TYPES:
        return config["model_type"]
    return next((fam for pattern, fam in FAMILIES if pattern.search(model_id)), None)


def _hub_config(model_id: str, cache: Path) -> Path | None:
    """config.json from the Hugging Face hub when it can be reached (token from HF_TOKEN)."""
    if "/" not in model_id or Path(model_id).exists():
        return None
    path = cache / "configs" / model_id.replace("/", "--") / "config.json"
    if path.is_file():  # fetched before (or put there by hand)
        return path
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return None
    from runner import hub  # the same endpoint (HF_ENDPOINT) and id rules as every other fetch
    try:
        r = httpx.get(f"{hub.endpoint()}/{hub.check_id(model_id)}/resolve/main/config.json",
                      headers=hub.auth_headers(), timeout=10, follow_redirects=True)
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


def build(model_or_config: str, env: TargetEnv, out: Path, *, cache: Path, layers: int = 2,
          tokenizer_from: str | None = None, seed: int = 0, config_from: str | None = None,
          full_size: bool = False) -> StandIn:
    """Build a twin into `out` (replaced) with `env`'s Python; raise StandInError if impossible.

    The config comes from `config_from` (a dir or .json), else MODEL_OR_CONFIG itself when it is
    one, else the hub (or its cached copy), else the family's defaults in the env's transformers.
    """
    config_path = (_local_config(config_from or model_or_config) or _hub_config(model_or_config, cache))
    config = json.loads(config_path.read_text()) if config_path else None
    family = family_of(model_or_config, config)
    if family is None:
        raise StandInError(f"no stand-in family known for {model_or_config} "
                           f"(known: {', '.join(sorted(MODEL_TYPES))})")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [env.python, str(BUILDER), "--family", family, "--model-id", model_or_config, "--out", str(out),
           "--layers", str(layers), "--seed", str(seed)]
    if config_path:
        cmd += ["--config-json", str(config_path)]
    if tokenizer_from:
        cmd += ["--tokenizer-from", tokenizer_from]
    if full_size:
        cmd.append("--full-size")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=without_secrets({**os.environ, **env.env}),
                          timeout=STANDIN_BUILD_S)
    if proc.returncode:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise StandInError(f"building a {family} twin with transformers {env.info.get('transformers')} failed: {tail}")
    built = json.loads(proc.stdout.strip().splitlines()[-1])
    source = f"config.json from {config_path}" if config_path else built["config_source"]
    twin = StandIn(model_or_config, str(out), family, source, built["transformers"],
                   len(built.get("layer_types") or []) or layers, tokenizer_from, built.get("architectures"),
                   built.get("layer_types"), built.get("notes") or [], full_size)
    (out / STANDIN_MARKER).write_text(json.dumps(asdict(twin), indent=1))
    return twin


def ensure(model_id: str, env: TargetEnv, cache: Path, *, layers: int = 2, tokenizer_from: str | None = None,
           config_from: str | None = None, full_size: bool = False) -> StandIn:
    """The cached twin of `model_id` for `env`, built the first time."""
    config_path = _local_config(config_from) if config_from else None
    key = hashlib.sha256(json.dumps({
        "model": model_id, "layers": None if full_size else layers, "tokenizer_from": tokenizer_from,
        "full_size": full_size,
        "config": hashlib.sha256(config_path.read_bytes()).hexdigest() if config_path else None,
        "transformers": env.info.get("transformers"), "builder": hashlib.sha256(b"".join(f.read_bytes() for f in BUILDER_FILES)).hexdigest(),
    }, sort_keys=True).encode()).hexdigest()[:12]
    out = cache / "standins" / f"{re.sub(r'[^A-Za-z0-9.]+', '-', model_id)[-50:]}-{key}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{out}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel GPU workers may want the same twin
        marker = out / STANDIN_MARKER
        if marker.exists():
            return StandIn(**json.loads(marker.read_text()))
        return build(model_id, env, out, cache=cache, layers=layers, tokenizer_from=tokenizer_from,
                     config_from=config_from, full_size=full_size)
