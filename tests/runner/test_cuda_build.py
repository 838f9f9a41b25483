"""The CUDA `vllm` wheel on a machine without an accelerator: the shipped GPU default's stable
target, used as an existing environment (`python = ...`).  Its parser cannot be built as
is; the helper patches DeviceConfig.__post_init__ as vLLM's docs build does."""

from __future__ import annotations

import os
import subprocess

import pytest
from runhelp import CACHE, outcomes, pick, run_cli

from runner.envs import ensure
from runner.targets import Target


@pytest.fixture(scope="module")
def cuda_env():
    # the CUDA release of the Gemma 4 doc issue (the shipped GPU file leaves stable open: newest release)
    return ensure(Target("stable", pip="vllm==0.20.1"), CACHE)


def test_bare_cli_cannot_build_its_parser_here(cuda_env):
    proc = subprocess.run([*cuda_env.vllm, "serve", "--help"], capture_output=True, text=True,
                          env={**os.environ, **cuda_env.env}, timeout=300)
    assert proc.returncode != 0
    assert "Failed to infer device type" in proc.stderr + proc.stdout


def test_parse_tier_runs_on_the_cuda_build(cuda_env, docs, tmp_path):
    snippets, ids = docs
    targets = tmp_path / "t.toml"
    targets.write_text(f'[targets.cuda]\npython = "{cuda_env.info["path"]}"\n')
    run_cli(str(snippets), "--targets", str(targets), "--tier", "config", "--gpus", "0",
            "--only", ids["a-removed-flag"][0], ids["draft-model"][0], "-o", str(tmp_path / "o.jsonl"), cwd=tmp_path)
    items = outcomes(tmp_path / "o.jsonl")
    removed = pick(items, ids["a-removed-flag"][0], "cuda")
    assert (removed.verdict, removed.stage) == ("FAIL", "parse")
    assert "--disable-log-requests" in removed.reason
    assert removed.target.version == "0.20.1" and removed.target.distribution == "vllm"
    assert removed.target.commit and len(removed.target.commit) >= 7
    draft = pick(items, ids["draft-model"][0], "cuda")
    # parse passed; the model is not mapped here, and a CUDA build cannot build its engine
    # config without an accelerator: SKIP, not FAIL
    assert draft.verdict == "SKIP" and draft.stage == "config"
