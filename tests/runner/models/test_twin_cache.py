"""The twin cache under a size (runner/models/twin_cache.py): real twins built in a real target env,
real file locks, a second process holding a lease."""

from __future__ import annotations

import subprocess
import sys

import pytest

from driftmatrix.runner.models import twin_cache, twins
from driftmatrix.runner.models.resolution import TWIN_MARKER
from driftmatrix.runner.settings import twin_cache_bytes


def _holder(use_file: str) -> subprocess.Popen:
    """Another process (a parallel job) using a twin: it holds the twin's lease until killed."""
    code = (
        "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_SH); "
        "print('held', flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, use_file], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_the_cache_drops_least_recently_used_twins_but_never_one_in_use(cpu_envs, tmp_path, monkeypatch):
    env, cache = cpu_envs["nightly"], tmp_path / "cache"
    held = []
    a = twins.ensure("Qwen/Qwen3-0.6B", env, cache, leases=held)
    one = twin_cache.folder_bytes(cache / "standins")
    monkeypatch.setenv("DRIFTMATRIX_TWIN_CACHE_GB", str(one * 1.5 / 1e9))  # room for one twin

    b = twins.ensure("Qwen/Qwen3-8B", env, cache, layers=1)
    assert (cache / "standins" / a.dir.split("/")[-1] / TWIN_MARKER).exists(), "a twin in use was dropped"
    assert (cache / "standins" / b.dir.split("/")[-1] / TWIN_MARKER).exists(), "the twin just built was dropped"

    for lease in held:  # the job that used `a` ended
        lease.close()
    other = _holder(f"{b.dir}.use")  # `b` is now in use by another process
    try:
        c = twins.ensure("Qwen/Qwen3-4B", env, cache, layers=1)
        names = {p.parent.name for p in (cache / "standins").glob(f"*/{TWIN_MARKER}")}
        assert names == {b.dir.split("/")[-1], c.dir.split("/")[-1]}, names  # `a`: least recent, free
    finally:
        other.kill()
        other.wait()
    assert twin_cache.trim(cache / "standins", int(one * 1.5)) == [b.dir.split("/")[-1]]
    assert twin_cache.folder_bytes(cache / "standins") <= one * 1.5

    again = twins.ensure("Qwen/Qwen3-0.6B", env, cache)  # a dropped twin is simply built again
    assert again.dir == a.dir and (cache / "standins" / a.dir.split("/")[-1] / "config.json").exists()


def test_no_limit_keeps_every_twin(cpu_envs, tmp_path, monkeypatch):
    monkeypatch.delenv("DRIFTMATRIX_TWIN_CACHE_GB", raising=False)
    env, cache = cpu_envs["nightly"], tmp_path / "cache"
    twins.ensure("Qwen/Qwen3-0.6B", env, cache)
    twins.ensure("Qwen/Qwen3-8B", env, cache, layers=1)
    assert twin_cache.trim(cache / "standins", None) == []
    assert len(list((cache / "standins").glob(f"*/{TWIN_MARKER}"))) == 2


@pytest.mark.parametrize(
    "raw, limit",
    [
        (None, None),
        ("", None),
        ("2", 2_000_000_000),
        ("0.5", 500_000_000),
        ("2GB", 0),
        ("-1", 0),
        ("nan", 0),
        ("free", "free"),
        (" FREE ", "free"),
    ],
)
def test_the_limit_a_variable_sets(raw, limit, monkeypatch):
    """Unset: every twin kept; a typo keeps only the twins in use rather than filling the disk."""
    if raw is None:
        monkeypatch.delenv("DRIFTMATRIX_TWIN_CACHE_GB", raising=False)
    else:
        monkeypatch.setenv("DRIFTMATRIX_TWIN_CACHE_GB", raw)
    assert twin_cache_bytes() == limit


def test_free_keeps_what_leaves_the_reserve_free_on_the_disk(tmp_path, monkeypatch):
    """`free` (the workflow's setting on GitHub's runners, whose cache is on /mnt): the twins held plus
    the disk's free space, less the reserve for the next build, measured on the real disk now."""
    import shutil

    from driftmatrix.runner.settings import TWIN_FREE_RESERVE_GB

    twins_dir = tmp_path / "cache" / "standins"
    monkeypatch.setenv("DRIFTMATRIX_TWIN_CACHE_GB", "free")
    free = shutil.disk_usage(tmp_path).free
    assert abs(twin_cache.limit(twins_dir) - max(0, free - int(TWIN_FREE_RESERVE_GB * 1e9))) < 50e6  # none held yet
    (twins_dir / "t1").mkdir(parents=True)
    (twins_dir / "t1" / "model.safetensors").write_bytes(b"\0" * 10_000_000)
    held = twin_cache.folder_bytes(twins_dir)
    got = twin_cache.limit(twins_dir)
    assert abs(got - max(0, held + shutil.disk_usage(tmp_path).free - int(TWIN_FREE_RESERVE_GB * 1e9))) < 50e6
    monkeypatch.setenv("DRIFTMATRIX_TWIN_CACHE_GB", "3")
    assert twin_cache.limit(twins_dir) == 3_000_000_000
