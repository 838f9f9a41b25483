"""What a command's ranks are (runner/argv/parallel.py), read once for every reader: the device
count is `Ranks.world` whichever way the command spells its sizes, and the twin's shape, the GPU
pool and the refusals read the same numbers."""

from __future__ import annotations

import pytest

from driftmatrix.runner.argv.parallel import ranks_of
from driftmatrix.runner.argv.shape import twin_shape
from driftmatrix.runner.serve import ranks


@pytest.mark.parametrize(
    "argv, want",
    [
        (["m"], (1, 1, 1, 1, 1)),
        (["m", "-tp", "2", "-pp", "2"], (2, 2, 1, 1, 4)),
        (["m", "--tensor-parallel-size=4", "--enable-expert-parallel"], (4, 1, 1, 4, 4)),
        (["m", "--data-parallel-size", "4", "--enable-expert-parallel"], (1, 1, 4, 4, 4)),
        (["m", "-dp", "2", "-tp", "2", "-ep"], (2, 1, 2, 4, 4)),
        (["m", "-tp", "<N>"], (1, 1, 1, 1, 1)),
        (["m", "--tensor-parallel-size", "4", "-pp", "2"], (4, 2, 1, 1, 8)),
        (["m", "--data-parallel-size=2", "-tp", "2"], (2, 1, 2, 1, 4)),
        (["m", "-tp", "2", "--enable-expert-parallel=false"], (2, 1, 1, 1, 2)),
        (["m", "-tp", "0"], (1, 1, 1, 1, 1)),  # a size below 1 counts as one device, never none
        (["m", "-tp"], (1, 1, 1, 1, 1)),  # a flag cut off at the end of the command
    ],
)
def test_what_a_command_asks_for(argv, want):
    r = ranks_of(argv)
    assert (r.tp, r.pp, r.dp, r.ep, r.world) == want


@pytest.mark.parametrize(
    "argv",
    [
        ["m", "--tensor-parallel-size=2"],
        ["m", "--tensor-parallel-size", "2"],
        ["m", "-tp", "2"],
        ["m", "-tp=2"],
        ["m", "--pipeline-parallel-size", "2"],
        ["m", "-pp=2"],
        ["m", "--data-parallel-size", "2", "--enable-expert-parallel"],
        ["m", "-dp", "2", "-ep"],
    ],
)
def test_every_spelling_of_two_ranks_is_two_devices_to_every_reader(argv):
    """Each spelling asks for 2 devices, and each reader agrees: the device count, the twin's
    shape (its sizes multiply to the same world), and the refusal on a one-GPU run."""
    r = ranks_of(argv)
    assert r.world == 2
    shape = twin_shape(argv)
    assert shape["tp"] * shape["pp"] * shape["dp"] == r.world
    assert (shape["tp"], shape["pp"], shape["dp"], shape["ep"]) == (r.tp, r.pp, r.dp, r.ep)
    assert ranks.refusal(r, gpus=1, cpu_build=False).startswith("needs 2 devices")
    assert ranks.refusal(r, gpus=2, cpu_build=False) is None


def test_expert_parallel_spans_tensor_and_data_ranks_without_adding_devices():
    """vLLM's EP size is tp x dp: expert parallel splits the experts over ranks that exist already."""
    plain, ep = ranks_of(["m", "-tp", "2", "-dp", "2"]), ranks_of(["m", "-tp", "2", "-dp", "2", "-ep"])
    assert (plain.ep, ep.ep) == (1, 4) and plain.world == ep.world == 4
    assert twin_shape(["m", "-tp", "2", "-dp", "2", "-ep"])["ep"] == 4


def test_one_node_of_several_is_named():
    assert ranks_of(["m", "-dp", "4", "--data-parallel-address=10.0.0.1"]).multi_node == "--data-parallel-address"
    assert ranks_of(["m", "-tp", "2"]).multi_node is None
