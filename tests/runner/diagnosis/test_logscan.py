"""Log reading helpers (the real server logs are read in test_serve.py, next to the servers that wrote them),
and their bounds on untrusted log text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from driftmatrix.runner.diagnosis import logscan


def test_raising_file_is_named_from_the_vllm_package_wherever_it_is_installed():
    from driftmatrix.runner.diagnosis.logscan import relative

    assert relative("/x/lib/python3.12/site-packages/vllm/v1/a.py") == "vllm/v1/a.py"
    assert (
        relative("/root/site-0.20.1/vllm/v1/spec_decode/llm_base_proposer.py")
        == "vllm/v1/spec_decode/llm_base_proposer.py"
    )  # a carried vLLM (GPU run)
    assert relative("/home/u/vllm/vllm/config/speculative.py") == "vllm/config/speculative.py"  # a checkout
    assert relative("/usr/lib/python3.12/json/decoder.py") == "/usr/lib/python3.12/json/decoder.py"


# --- bounded input: a log is untrusted text (vLLM echoes the docs' arguments into it) -----------------

REPO = Path(__file__).resolve().parents[3]
HEADER = "Traceback (most recent call last):"
FRAME = '  File "/site/vllm/engine/arg_utils.py", line 7, in create'


def in_fresh_process(code: str, timeout: float = 30) -> dict:
    """Run `code` (which prints one JSON line) in a fresh interpreter: a regression to quadratic time
    fails on the generous timeout instead of hanging the suite."""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_4mb_line_after_a_traceback_header_is_scanned_correctly():
    """`aError` x 700k then `!` made the exception-line regex try every `Error` with every tail
    (a 40 kB line took 6 s, 4 MB hours); a 4 MB message is kept cut, with a marker."""
    got = in_fresh_process(f"""
import json
from driftmatrix.runner.diagnosis import logscan, classify
lines = [{HEADER!r}, {FRAME!r}, "    raise", "aError" * 700_000 + "!", "ValueError: " + "x" * 4_000_000,
         "(EngineCore pid=9) " + {HEADER!r}, "(EngineCore pid=9) " + "aError" * 700_000,
         "(EngineCore pid=9) vllm.RuntimeError: " + "kv cache " * 500_000]
tbs = logscan.tracebacks(lines)
root = classify.root_cause(tbs)
sig = classify.match_signature(root.type + ": " + root.message)
print(json.dumps({{"tbs": [[t.type, t.message[:20], t.message[-40:], len(t.message), t.frames, t.end] for t in tbs],
                   "root": root.type, "sig": getattr(sig, "id", None)}}))
""")
    (t1, start1, end1, len1, frames1, line1), (t2, start2, _, len2, frames2, line2) = got["tbs"]
    assert (t1, start1, line1, frames1[0]["function"]) == ("ValueError", "x" * 20, 4, "create")
    assert end1.endswith(f"[{4_000_000 - logscan.MAX_MESSAGE_CHARS} more characters]")
    assert len1 < logscan.MAX_MESSAGE_CHARS + 50
    assert (t2, start2, line2, frames2) == ("vllm.RuntimeError", "kv cache kv cache kv", 7, [])
    assert len2 < logscan.MAX_MESSAGE_CHARS + 50
    assert got["root"] == "ValueError" and got["sig"] is None


ADVERSARIAL = [
    "aError",
    "Error",
    "a.",
    "(",
    "(pid=1",
    "[",
    "Initializing a V1 LLM engine (",
    "Model loading took 1",
    "method",
    "ImportError: package ",
    "kv cache",
    "max_model_len",
    "Free memory on device ",
    "sk-",
    "-github_pat_",
    "hf_",
    " ",
    "\t",
    "does not ",
    "is ignored",
]


def test_every_log_pattern_is_fast_on_long_adversarial_lines():
    """Each reader of a log (logscan), each classification (signatures, feature warnings, root
    cause) and the redactor, on 4 MB lines made of each pattern's own pieces (a signature such as
    `(ImportError|…): .*(package .*is required|…)` is cubic in what it searches)."""
    got = in_fresh_process(
        f"""
import json
from driftmatrix.runner.diagnosis import logscan, classify
from driftmatrix.common import redact
redactor = redact.Redactor(env={{}})
out = {{}}
for unit in {ADVERSARIAL!r}:
    line = (unit * (4_000_000 // len(unit) + 1))[:4_000_000]
    lines = [{HEADER!r}, line, "WARNING 01-02 03:04:05 [a.py:1] " + line,
             "(EngineCore pid=1) ERROR 01-02 03:04:05 [a.py:1] " + line, "x " + line]
    tbs = logscan.tracebacks(lines)
    warned = logscan.warnings(lines)
    classify.warning_records(warned)
    classify.root_cause(tbs)
    classify.match_signature(line, logscan.excerpt(lines), "Error: " + line)
    logscan.engine_config(lines), logscan.memory_facts(lines), logscan.log_lines(lines)
    redactor(line)
    out[unit] = [len(tbs), len(warned), max((len(w.message) for w in warned), default=0)]
print(json.dumps(out))
""",
        timeout=120,
    )
    assert set(got) == set(ADVERSARIAL)
    for unit, (_, warned, longest) in got.items():
        assert warned == 1 and longest < logscan.MAX_MESSAGE_CHARS + 50, unit


def test_only_the_head_and_tail_of_a_huge_log_are_read(tmp_path):
    """A server log of many GB (sparse here): its first and last lines are read, with a note."""
    log = tmp_path / "server.log"
    with log.open("wb") as f:
        f.write(b"INFO 01-02 03:04:05 [a.py:1] Initializing a V1 LLM engine (v0.1) with config: dtype=bf16\n")
        f.seek(6 * 1024**3)
        f.write(b"\n" + HEADER.encode() + b"\n" + FRAME.encode() + b"\nValueError: the end\n")
    lines = logscan.read_lines(log)
    assert lines[0].startswith("INFO") and lines[-1] == "ValueError: the end"
    note = next(ln for ln in lines if ln.startswith("[driftmatrix:"))
    assert "were not read" in note and str(log.stat().st_size) in note
    assert sum(map(len, lines)) <= logscan.LOG_HEAD_BYTES + logscan.LOG_TAIL_BYTES + len(note)
    assert logscan.engine_config(lines)["dtype"] == "bf16"
    assert logscan.tracebacks(lines)[0].message == "the end"
    small = tmp_path / "small.log"
    small.write_text("a\nb\n")
    assert logscan.read_lines(small) == ["a", "b"] and logscan.read_lines(tmp_path / "none") == []
