"""Whether a run can give a command its ranks (runner/serve/ranks.py) and the twin's fit to a parallel
split (runner/intarget/twin_split.py), without a server: the refusals, the cores each rank is
bound to, and the twin sizes that divide. What a command asks for: tests/runner/argv/test_parallel.py."""

from __future__ import annotations

import sys

import pytest

from driftmatrix import runner
from driftmatrix.runner.argv.parallel import ranks_of
from driftmatrix.runner.serve import ranks
from driftmatrix.runner.settings import CPU_RANKS_MAX

INTARGET = runner.INTARGET  # the in-target scripts import each other as files next to them
sys.path.insert(0, str(INTARGET))
import twin_generic as generic  # noqa: E402
import twin_split as split  # noqa: E402

sys.path.remove(str(INTARGET))


def test_where_ranks_can_run():
    two = ranks_of(["m", "-tp", "2"])
    assert ranks.refusal(two, gpus=2, cpu_build=False) is None
    assert ranks.refusal(two, gpus=1, cpu_build=False) == "needs 2 devices (tensor 2 parallel); this run has 1 GPU(s)"
    assert ranks.refusal(two, gpus=0, cpu_build=True) is None
    assert "not vLLM's CPU build" in ranks.refusal(two, gpus=0, cpu_build=False)
    assert ranks.on_cpu(two, gpus=0) and not ranks.on_cpu(two, gpus=2) and not ranks.on_cpu(ranks_of(["m"]), 0)
    node = ranks_of(["m", "-dp", "4", "--data-parallel-size-local", "2", "--data-parallel-address", "10.0.0.1"])
    assert "one node of a multi-node deployment" in ranks.refusal(node, gpus=0, cpu_build=True)
    many = ranks_of(["m", "-tp", str(CPU_RANKS_MAX * 2)])
    assert f"at most {CPU_RANKS_MAX} ranks run on CPU" in ranks.refusal(many, gpus=0, cpu_build=True)


def test_each_rank_gets_its_cores_in_vllms_rank_order():
    assert ranks.cpu_binding(2, [0, 1]) == "0|1"
    assert ranks.cpu_binding(4, [0, 1]) == "0|0|1|1"  # measured: -tp 4 on 2 cores
    assert ranks.cpu_binding(2, [0, 1, 2, 3]) == "0,1|2,3"
    assert ranks.cpu_binding(8, [1]) == "|".join(["1"] * 8)  # a job's one core (settings.cpu_slots)
    assert ranks.cpu_binding(3, [4, 5]) == "4|4|5"


def test_a_twin_fits_every_split_its_command_asks_for():
    """One rule for every family: heads divide by TP (KV heads divide it or by it), a layer per PP
    stage with the kept layer pattern repeated, experts divide by EP; top-k never above the experts."""
    notes: list[str] = []
    cfg = {
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "hidden_size": 128,
        "head_dim": 32,
        "num_hidden_layers": 2,
        "layer_types": ["sliding_attention", "full_attention"],
        "mlp_only_layers": [0],
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
    }
    split.fit_parallel(cfg, {"tp": 8, "pp": 4, "ep": 8}, notes)
    assert cfg["num_attention_heads"] == 8 and cfg["num_key_value_heads"] == 2  # 8 % 2 == 0: replicated
    assert cfg["layer_types"] == ["sliding_attention", "full_attention"] * 2 and cfg["num_hidden_layers"] == 4
    assert cfg["mlp_only_layers"] == [0, 2] and cfg["n_routed_experts"] == 8 and cfg["num_experts_per_tok"] == 2
    assert notes == [
        "num_attention_heads 4 -> 8: divisible by the command's tensor parallel size 8",
        "num_hidden_layers 2 -> 4: a layer per stage of the command's pipeline parallel size 4",
        "n_routed_experts 4 -> 8: enough for the command's expert parallel size 8",
    ]
    tp_only: list[str] = []
    moe = {"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 128, "moe_num_experts": 4}
    split.fit_parallel(moe, {"tp": 8}, tp_only)  # vLLM's older MoE blocks refuse fewer experts than TP ranks
    assert moe["moe_num_experts"] == 8 and tp_only[-1].endswith("enough for the command's tensor parallel size 8")
    odd: list[str] = []
    three = {"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 128}
    split.fit_parallel(three, {"tp": 3}, odd)
    assert three == {"num_attention_heads": 6, "num_key_value_heads": 3, "hidden_size": 192}  # head width kept


@pytest.mark.parametrize(
    "source",
    [
        {"model_type": "ernie4_5_moe", "moe_num_experts": 64, "moe_k": 6},  # the H200 run's false FAIL: 6 of 4
        {"model_type": "x", "num_local_experts": 8, "num_experts_per_tok": 8},
        {
            "model_type": "step3p5",
            "moe_num_experts": 288,
            "moe_top_k": 8,
            "num_attention_groups": 8,
            "num_attention_heads": 64,
            "share_expert_dim": 1280,
        },
    ],
)
def test_top_k_never_above_the_experts_and_groups_divide_heads(source):
    cfg, _, _ = generic.twin_config({**source, "hidden_size": 4096, "num_hidden_layers": 4}, 2)
    experts = next(cfg[k] for k in generic.EXPERTS if k in cfg)
    assert all(cfg[k] <= experts for k in generic.TOP_K if k in cfg)
    heads, kv = cfg.get("num_attention_heads", 4), next((cfg[k] for k in generic.KV_HEADS if k in cfg), 1)
    assert heads % kv == 0 and cfg.get("share_expert_dim", 64) == 64
