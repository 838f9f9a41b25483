"""The ranks a command asks for: its tensor, pipeline, data and expert parallel sizes as vLLM reads
them from the command line, and whether it is one node of several. `Ranks.world` is the one rule
for how many devices (GPUs, or CPU worker processes) a command needs: the start tier, the weights
budget, the prefetch, the GPU pool and the shard costs all read it. Whether a run can give them is
runner/serve/ranks.py's."""

from __future__ import annotations

from dataclasses import dataclass

PARALLEL_FLAGS = {
    "--tensor-parallel-size": "tp",
    "-tp": "tp",
    "--pipeline-parallel-size": "pp",
    "-pp": "pp",
    "--data-parallel-size": "dp",
    "-dp": "dp",
}
"""Each parallel size's spellings (`--flag N` or `--flag=N`) -> the size it sets."""
EXPERT_PARALLEL_FLAGS = ("--enable-expert-parallel", "-ep")
"""Expert parallel on: the experts split over the tensor x data parallel ranks (vLLM's EP size)."""
MULTI_NODE_FLAGS = (
    "--nnodes",
    "--node-rank",
    "--headless",
    "--data-parallel-start-rank",
    "--data-parallel-address",
    "--data-parallel-rpc-port",
    "--data-parallel-size-local",
    "-dpl",
    "--master-addr",
    "--master-port",
)
"""Options of one node of a multi-node deployment: its other nodes' ranks are not this command's."""


@dataclass(frozen=True)
class Ranks:
    """The parallel sizes a command asks for."""

    tp: int = 1
    """Tensor parallel size."""
    pp: int = 1
    """Pipeline parallel size (the layers split into this many stages)."""
    dp: int = 1
    """Data parallel size (engine replicas)."""
    ep: int = 1
    """Expert parallel size: tp x dp with `--enable-expert-parallel`, else 1."""
    multi_node: str | None = None
    """The first option saying this is one node of several, if any."""

    @property
    def world(self) -> int:
        """Worker processes: one per device on a GPU, one per rank on a CPU."""
        return self.tp * self.pp * self.dp

    def describe(self) -> str:
        parts = [f"{name} {n}" for name, n in (("tensor", self.tp), ("pipeline", self.pp), ("data", self.dp)) if n > 1]
        ep = f", expert parallel over {self.ep}" if self.ep > 1 else ""
        return f"{' x '.join(parts) or 'one rank'} parallel{ep}"


def ranks_of(argv: list[str]) -> Ranks:
    """The ranks ARGV asks for: 1 for a size it does not set or sets to what is not a number
    (`-tp <N>`); the expert parallel size tp x dp where `--enable-expert-parallel` is on, as vLLM
    derives it."""
    sizes = {"tp": 1, "pp": 1, "dp": 1}
    expert_parallel = False
    for i, token in enumerate(argv):
        name, eq, value = token.partition("=")
        if name in EXPERT_PARALLEL_FLAGS:
            expert_parallel = value.lower() not in ("false", "0") if eq else True
        if name in PARALLEL_FLAGS:
            raw = value if eq else (argv[i + 1] if i + 1 < len(argv) else "1")
            try:
                sizes[PARALLEL_FLAGS[name]] = max(int(raw), 1)
            except ValueError:
                pass
    node = next((t.split("=", 1)[0] for t in argv if t.split("=", 1)[0] in MULTI_NODE_FLAGS), None)
    ep = sizes["tp"] * sizes["dp"] if expert_parallel else 1
    return Ranks(sizes["tp"], sizes["pp"], sizes["dp"], ep, node)
