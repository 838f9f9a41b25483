"""Issue 32, item 7: vLLM's messages and logs as recorded by real runs (tests/fixtures), made stable:
what changes from run to run goes, what says something stays."""

from __future__ import annotations

import json
import re
from pathlib import Path

from driftmatrix.common.stable_text import stable

GPU = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"


def _log_lines() -> list[str]:
    """Every log line the H200 runs recorded (tests/fixtures/gpu: twins on vLLM 0.21.0 and 0.26.0)."""
    lines = []
    for path in sorted(GPU.glob("*.jsonl")):
        for record in path.read_text().splitlines():
            lines += (json.loads(record)["evidence"].get("log_excerpt") or "").split("\n")
    return lines


def test_the_same_log_line_of_two_processes_reads_the_same():
    """vLLM logs the same event with another pid, time and measured duration in every process:
    `(EngineCore pid=5319) INFO 12-04 15:35:54 [default_loader.py:430] Loading weights took 0.02 seconds`."""
    events = ("Loading weights took", "torch.compile took", "distributed_init_method=tcp://")
    raw = {ln for ln in _log_lines() if any(e in ln for e in events)}
    shown = {stable(ln) for ln in raw}
    assert len(raw) > len(shown) == len(events), sorted(shown)
    assert "(EngineCore pid=…) INFO … [default_loader.py:430] Loading weights took … seconds" in shown
    assert any(s.endswith("distributed_init_method=tcp://192.0.2.2:… backend=nccl") for s in shown)


def test_no_volatile_value_is_left_in_the_recorded_logs():
    text = "\n".join(stable(ln) for ln in _log_lines())
    assert not re.search(r"pid=\d|\b\d\d:\d\d:\d\d\b|0x[0-9a-fA-F]{9,}|\d+\.\d+ ?s(econds)?\b", text)
    assert "[core.py:" in text  # the source line that logged it stays


def test_addresses_times_and_temp_names_go():
    message = (
        "vllm serve: error: argument --mm-processor-kwargs: Value max_pixels=1003520 cannot be converted "
        "to <function loads at 0x7f0d04700540>."
    )  # a real 0.32.0 message (its address differs per process)
    assert stable(message) == message.replace("0x7f0d04700540", "0x…")
    assert stable("[W1204 15:46:45.471349342 ProcessGroupNCCL.cpp:1200] x") == "[W… ProcessGroupNCCL.cpp:1200] x"
    assert stable("started 2026-12-05T05:52:56+00:00") == "started …"
    assert stable("[00:06<00:45,  1.04s/it]") == "[…<…,  …s/it]"
    assert stable("cannot write …/tmpk2j3_x9q") == "cannot write …/tmp…"


def test_what_says_something_stays():
    kept = [
        "vLLM 0.34.0 (commit 62d4bc3c7) requires transformers>=4.56.0",
        'File "vllm/engine/arg_utils.py", line 1136, in create_engine_config',
        "no /health 200 within our deadline of 600 s (server killed)",  # a limit: a whole number
        "Address already in use: http://0.0.0.0:8000",  # a port someone chose: below the OS's range
        "max_model_len (16384) is greater than the derived max_model_len (max_position_embeddings=4096.0)",
        "model deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B in /models/qwen-instruct",  # a word, not a temp name
        "magic 0xdeadbeef",
    ]  # a 32-bit constant
    for text in kept:
        assert stable(text) == text


def test_the_commands_own_values_stay():
    """An option value the message quotes is the docs' text: it stays even where it looks volatile."""
    message = "unrecognized arguments: --max-wait 1.5s --port 45000"
    assert stable(message) == "unrecognized arguments: --max-wait …s --port …"
    assert stable(message, keep=["--max-wait", "1.5s", "--port", "45000"]) == message
