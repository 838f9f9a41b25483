"""Ranks: whether this run can give a command the worker processes its parallel sizes ask for
(runner/argv/parallel.py `ranks_of`: the one rule for how many) — for the start tier, the weights
budget, the prefetch and the GPU pool.

On a GPU a rank is a GPU: a command asking for more than the run has SKIPs. vLLM's CPU build runs
the same parallel set-up with one worker process per rank over gloo (tensor, pipeline and data
parallel; ranks ordered DP, PP, TP as vLLM lays them out), so on a machine without a GPU a
multi-GPU command runs as that many CPU ranks: world size, rank placement, the divisibility checks
and the distributed start-up are vLLM's own. vLLM binds each rank's OpenMP threads to a NUMA node
of its own by default and refuses more ranks than nodes ("Not enough allowed NUMA nodes to bind
threads of 2 local CPUWorkers"), so the ranks get a binding of their own (`cpu_binding`): measured
on 2 cores, `-tp 2` ('0|1') and `-tp 4` ('0|0|1|1') answer /health in 60-70 s.
"""

from __future__ import annotations

from driftmatrix.runner.argv.parallel import Ranks, ranks_of
from driftmatrix.runner.settings import CPU_RANKS_MAX, available_gib, server_gib


def on_cpu(ranks: Ranks, gpus: int) -> bool:
    """The ranks run as CPU worker processes: more than one, and no GPU in this run."""
    return ranks.world > 1 and not gpus


def refusal(ranks: Ranks, gpus: int, cpu_build: bool) -> str | None:
    """Why this run cannot give the command its ranks (a SKIP reason), or None when it can."""
    world = ranks.world
    if world <= max(gpus, 1):
        return None
    what = f"needs {world} devices ({ranks.describe()})"
    if gpus:
        return f"{what}; this run has {gpus} GPU(s)"
    if not cpu_build:
        return f"{what}; this run has no GPU and the target is not vLLM's CPU build, which alone runs ranks on CPU"
    if ranks.multi_node:
        return (
            f"{what} across nodes ({ranks.multi_node}): one node of a multi-node deployment, whose other ranks "
            "are not this command's"
        )
    if world > CPU_RANKS_MAX:
        return f"{what}; at most {CPU_RANKS_MAX} ranks run on CPU here (settings.CPU_RANKS_MAX)"
    need = server_gib(world)
    have = available_gib()
    if need > have:
        return f"{what}; {world} CPU ranks need ~{need:.0f} GiB of memory, this machine has {have:.0f} GiB available"
    return None


def refusal_on(argv: list[str], gpus: int, target) -> str | None:
    """`refusal` for ARGV on a target environment (runner/builds/envs.py TargetEnv): its ranks run on
    CPU only on vLLM's CPU build run here, not in a container."""
    return refusal(ranks_of(argv), gpus, target.cpu_build and not target.target.docker)


def cpu_binding(world: int, cores: list[int]) -> str:
    """VLLM_CPU_OMP_THREADS_BIND for `world` ranks on `cores`: one core list per rank, `|`-separated,
    in vLLM's rank order. Ranks split the cores into contiguous shares ('0,1|2,3'); with more ranks
    than cores, neighbouring ranks share a core ('0|0|1|1')."""
    cores = sorted(cores)
    if world <= len(cores):
        share = len(cores) // world
        return "|".join(",".join(map(str, cores[r * share : (r + 1) * share])) for r in range(world))
    return "|".join(str(cores[r * len(cores) // world]) for r in range(world))
