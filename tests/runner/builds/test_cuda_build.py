"""The CUDA `vllm` wheel on a machine without an accelerator: the shipped GPU default's stable
target, used as an existing environment (`python = ...`).  Its parser cannot be built as
is; the helper patches DeviceConfig.__post_init__ as vLLM's docs build does.  Its engine config is
built over a declared CUDA device (runner/intarget/declared_device.py): a verdict with that depth
stated, or a SKIP naming what the declaration decided for that command."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from runhelp import CACHE, catalog_of, docs_tree, outcomes, pick, run_cli

from driftmatrix.runner.builds.envs import ensure
from driftmatrix.runner.builds.targets import Target


@pytest.fixture(scope="module")
def cuda_env():
    # the CUDA release of the Gemma 4 doc issue (the shipped GPU file leaves stable open: newest release)
    return ensure(Target("stable", pip="vllm==0.20.1"), CACHE)


def test_bare_cli_cannot_build_its_parser_here(cuda_env):
    proc = subprocess.run(
        [*cuda_env.vllm, "serve", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, **cuda_env.env},
        timeout=300,
    )
    assert proc.returncode != 0
    assert "Failed to infer device type" in proc.stderr + proc.stdout


def test_parse_tier_runs_on_the_cuda_build(cuda_env, docs, tmp_path):
    snippets, ids = docs
    targets = tmp_path / "t.toml"
    targets.write_text(f'[targets.cuda]\npython = "{cuda_env.info["path"]}"\n')
    run_cli(
        str(snippets),
        "--targets",
        str(targets),
        "--tier",
        "config",
        "--gpus",
        "0",
        "--only",
        ids["a-removed-flag"][0],
        ids["draft-model"][0],
        "-o",
        str(tmp_path / "o.jsonl"),
        cwd=tmp_path,
    )
    items = outcomes(tmp_path / "o.jsonl")
    removed = pick(items, ids["a-removed-flag"][0], "cuda")
    assert (removed.verdict, removed.stage) == ("FAIL", "parse")
    assert "--disable-log-requests" in removed.reason
    assert removed.target.version == "0.20.1" and removed.target.distribution == "vllm"
    assert removed.target.commit and len(removed.target.commit) >= 7
    draft = pick(items, ids["draft-model"][0], "cuda")
    # parse passed; the model is not mapped here: SKIP at config, not FAIL
    assert draft.verdict == "SKIP" and draft.stage == "config"


DECLARED_DOCS = """
# Declared device

## Builds

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 4096
```

## Rejected anywhere

```bash
vllm serve Qwen/Qwen3-0.6B --async-scheduling --speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'
```

## More GPUs than declared

```bash
vllm serve Qwen/Qwen3-0.6B --tensor-parallel-size 16
```
"""


def test_config_tier_over_a_declared_device(cuda_env, tiny_models, tmp_path):
    """No GPU here: the CUDA build's engine config is built over the declared H200-like device (9.0,
    8 GPUs) with its real kernel library over a no-device driver stub, on the real Qwen3 twin."""
    snippets, ids = catalog_of(docs_tree(tmp_path / "docs", DECLARED_DOCS))
    targets = tmp_path / "t.toml"
    targets.write_text(
        f'[targets.cuda]\npython = "{cuda_env.info["path"]}"\n\n[models]\n'
        f'"Qwen/Qwen3-0.6B" = "{tiny_models["target"]}"\n'
    )
    run_cli(
        str(snippets),
        "--targets",
        str(targets),
        "--tier",
        "config",
        "--gpus",
        "0",
        "-o",
        str(tmp_path / "o.jsonl"),
        cwd=tmp_path,
    )
    items = outcomes(tmp_path / "o.jsonl")
    builds = pick(items, ids["builds"][0], "cuda")
    assert (builds.verdict, builds.stage) == ("PASS", "config"), builds.reason
    assert builds.evidence.effective_config["max_model_len"] == 4096
    assert builds.evidence.effective_config["dtype"] == "torch.bfloat16"  # the declared 9.0 has bfloat16
    assert builds.stand_in
    assert any(
        n.startswith("config built with a declared CUDA device 9.0 (NVIDIA H200, 140 GiB, 8 GPUs), no device present")
        for n in builds.evidence.notes
    ), builds.evidence.notes

    # vLLM's own cross-feature check, which asks nothing of the device: a FAIL as on any GPU
    rejected = pick(items, ids["rejected-anywhere"][0], "cuda")
    assert (rejected.verdict, rejected.stage) == ("FAIL", "config"), rejected.reason
    assert (
        "async scheduling is only supported with EAGLE/MTP/Draft Model/NGram GPU" in rejected.evidence.exception.message
    )
    assert any(n.startswith("config built with a declared CUDA device 9.0") for n in rejected.evidence.notes)

    # the rejection rests on the declared device count: not the command's fault alone
    more = pick(items, ids["more-gpus-than-declared"][0], "cuda")
    assert (more.verdict, more.stage) == ("SKIP", "config"), more.reason
    assert more.reason.startswith("decided by the declared device, not by the command alone")
    assert "after asking the device count" in more.reason
    assert "World size (16) is larger than the number of available GPUs (8)" in more.reason
    assert "needs an accelerator" not in more.reason


WITHHELD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import declared_device as dd
import torch
state = dd.Declared({})
dd.install(state)
from vllm.platforms import current_platform
from vllm.utils import platform_utils
from vllm.model_executor.layers.quantization.utils import marlin_utils
print(json.dumps({
    "platform": type(current_platform).__name__, "stub": bool(state.stub), "unavailable": state.unavailable,
    # declared facts only: answered, nothing withheld
    "dtypes": [str(d) for d in state.config(lambda: current_platform.supported_dtypes)[0]],
    "fp8": state.config(lambda: torch.ops._C.cutlass_scaled_mm_supports_fp8(90))[0],
    # vLLM asks torch about the device: withheld, whatever it returns or raises
    "torch": state.config(lambda: marlin_utils.maybe_warn_marlin_atomic_add(0, torch.bfloat16))[1],
    # a platform query the declaration does not answer
    "units": state.config(platform_utils.num_compute_units)[1],
}))
"""


def test_device_queries_are_withheld(cuda_env, tmp_path):
    """What vLLM asks of the device itself is never answered from the declaration: the result is
    withheld, naming the call and where vLLM made it; the kernel library's compiled-in answers are
    its own (cutlass_scaled_mm_supports_fp8(90): True)."""
    from driftmatrix.runner.serve.helper_client import DECLARED_HELPER

    script = tmp_path / "withheld.py"
    script.write_text(WITHHELD)
    proc = subprocess.run(
        [cuda_env.python, str(script), str(DECLARED_HELPER.parent)],
        capture_output=True,
        text=True,
        env={**os.environ, **cuda_env.env, "TMPDIR": str(tmp_path)},
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["platform"] == "DeclaredCudaPlatform" and got["stub"] and got["unavailable"] is None
    assert got["dtypes"] == ["torch.bfloat16", "torch.float16", "torch.float32"]
    assert got["fp8"] is True
    assert got["torch"].startswith(
        "cannot be decided without a device: vLLM asked torch.cuda.get_device_capability() "
        "at vllm/model_executor/layers/quantization/utils/marlin_utils.py:"
    )
    assert got["units"].startswith(
        "cannot be decided without a device: vLLM asked the platform's "
        "num_compute_units() at vllm/utils/platform_utils.py:"
    )


TODAYS_STABLE = "0.34.0"
"""vLLM's stable release when this was written (the CPU fallback resolves the newest at run time)."""


@pytest.fixture(scope="module")
def todays_stable():
    """Its CUDA wheel pins flashinfer-python==0.7.3, which PyPI never had: installed without that pin,
    said so (runner/builds/envs.py), instead of a target that cannot be checked at all."""
    return ensure(Target("stable", pip=f"vllm=={TODAYS_STABLE}"), CACHE)


def test_todays_stable_parses_on_its_cuda_wheel(todays_stable, tmp_path):
    page = (
        "# Today\n\n```bash\nvllm serve Qwen/Qwen3-0.6B --swap-space 4\n```\n\n"
        # paired again with --enable-log-requests in 0.34.0 (argparse_utils: --enable-x / --disable-x)
        "```bash\nvllm serve Qwen/Qwen3-0.6B --disable-log-requests\n```\n"
    )
    snippets, _ = catalog_of(docs_tree(tmp_path / "docs", page))
    ids = [s["id"] for s in json.loads(snippets.read_text())["snippets"]]
    targets = tmp_path / "t.toml"
    targets.write_text(
        f'[targets.stable]\npip = "vllm=={TODAYS_STABLE}"\nmax_tier = "config"\nlabel = "CUDA wheel on a CPU runner"\n'
    )
    run_cli(
        str(snippets),
        "--targets",
        str(targets),
        "--tier",
        "probe",
        "--gpus",
        "0",
        "-o",
        str(tmp_path / "o.jsonl"),
        cwd=tmp_path,
    )
    items = outcomes(tmp_path / "o.jsonl")
    swap, log_requests = (pick(items, i, "stable") for i in ids)
    assert (swap.verdict, swap.stage) == ("FAIL", "parse") and "--swap-space" in swap.reason
    assert log_requests.stage == "config" and log_requests.verdict != "ERROR", log_requests.reason  # parsed
    assert log_requests.tier == "config"  # max_tier: no server from a CUDA wheel without a GPU
    for o in (swap, log_requests):
        assert (o.target.version, o.target.distribution, o.target.label) == (
            TODAYS_STABLE,
            "vllm",
            "CUDA wheel on a CPU runner",
        )
        assert o.target.without == (todays_stable.info.get("without") or None)
    for requirement in todays_stable.info.get("without") or []:  # only exact pins of other packages are left out
        name, _, version = requirement.partition("==")
        assert version and not name.startswith("vllm")
