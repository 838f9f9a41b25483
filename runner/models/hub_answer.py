"""What the hub's answer about a model id says of the docs.

Most answers say nothing about them: a 401 or 403 is a gated or private repository (and the hub
answers an unauthenticated request for a missing one with 401 too, as for a private one), a 5xx or no
answer is the hub's trouble, and offline nothing is asked: "cannot say", a SKIP. Two answers say the
docs are wrong for every reader on every build (`unloadable`, the one place this is decided):

- no such repository: 404 for its file listing (`Qwen/Qwen3-235B-A22`, an id cut short);
- a repository vLLM reads no model from: neither a top-level config.json (Hugging Face format) nor
  vLLM's Mistral format, params.json beside consolidated*.safetensors (vllm/transformers_utils/
  config.py get_config; model_loader/default_loader.py) — `meta-llama/Llama-2-7b`, Meta's own
  format, whose `-hf` twin is what vLLM loads. A repository with .gguf files is left undecided:
  GGUF ids are read in ways that vary by release (`repo:quant`, `--hf-config-path`).

The answer is kept beside the model folders for MAX_AGE_S (`keep`, `kept`): the workflow's fetch
step holds the token and the run step does not, and the hub answers the run step's tokenless request
401 where it answered the fetch step 404. Only for a while: a repository may be created later.
"""

from __future__ import annotations

import fnmatch
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from driftmatrix.runner.outcomes.evidence_record import HubAnswer

MAX_AGE_S = 12 * 3600
"""How long a kept answer stands for later runs: longer than a workflow run, shorter than its schedule."""
FILES_SHOWN = 40
"""The top-level files an answer lists (evidence, not an inventory)."""
READ_ELSEWHERE = ("--revision", "--hf-config-path")
"""Options with which the served model is not what the hub's `main` holds at its top level: then its
answer decides nothing."""


def unloadable(status: int, paths: list[str] | None) -> str | None:
    """Why vLLM cannot load the repository as the docs name it, from the hub's answer to its file
    listing (`status`; `paths`: the files listed, None before a listing was read); None when it can,
    or when the answer does not say."""
    if status == 404:
        return "no such repository on the hub (404 for its file listing)"
    if status != 200 or paths is None or any(p.lower().endswith(".gguf") for p in paths):
        return None
    top = [p for p in paths if "/" not in p]
    if "config.json" in top or ("params.json" in top and fnmatch.filter(top, "consolidated*.safetensors")):
        return None
    mistral = (
        " (its params.json has no consolidated*.safetensors beside it: not vLLM's Mistral format)"
        if "params.json" in top
        else ""
    )
    return f"the repository has no config.json at its top level{mistral}"


def answer(
    model_id: str, status: int, why: str, paths: list[str], endpoint: str, error_code: str | None = None
) -> HubAnswer:
    top = sorted(p for p in paths if "/" not in p)
    shown = top[:FILES_SHOWN] + ([f"... {len(top) - FILES_SHOWN} more"] if len(top) > FILES_SHOWN else [])
    return HubAnswer(
        model_id, status, why, shown, endpoint, datetime.now(UTC).isoformat(timespec="seconds"), error_code
    )


def read_elsewhere(argv: list[str], served: bool) -> str | None:
    """The option with which the command reads the served model from somewhere other than the hub's
    `main` listing (argv as the release's parser spells it); None for a draft or without one."""
    if not served:
        return None
    return next((opt for opt in READ_ELSEWHERE if any(a == opt or a.startswith(f"{opt}=") for a in argv)), None)


def _path(folder: Path) -> Path:
    return folder.with_name(f"{folder.name}.unloadable.json")


def keep(folder: Path, found: HubAnswer) -> None:
    """Beside the model's folder (`hub.model_dir`), written whole or not at all."""
    path = _path(folder)
    tmp = path.with_name(f"{path.name}.tmp")  # no leading dot: fetch_configs clears `.<folder>-*` as its own
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(found.to_json(), indent=1))
        os.replace(tmp, path)
    except OSError:  # a full disk loses the later steps' copy, not this step's answer
        tmp.unlink(missing_ok=True)


def kept(folder: Path, endpoint: str) -> HubAnswer | None:
    """The answer kept for this model by a step before, when it is recent and from the same hub."""
    path = _path(folder)
    try:
        if time.time() - path.stat().st_mtime > MAX_AGE_S:
            return None
        found = HubAnswer.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return found if found.endpoint == endpoint else None
