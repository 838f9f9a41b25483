"""A dress rehearsal of the scheduled workflow on this machine (issues 31, 47): its jobs in the graph's
order, each in a clean folder holding only the artifacts the graph hands it — extract → each run
leg → verify-fixes → save-state → publish → pull-requests (dry run) — with the CPU fallback's
targets file resolved against the real package index. Each job is measured by
benchmarks/leg_disk.py (wall time, peak memory of its process tree, peak disk of its folder plus the
environments and twins it made or used, as a fresh runner would hold them).

Every job after extract runs the workflow's own steps, read from .github/workflows/driftmatrix.yml
(PyYAML): each `run:` script in bash (`-eo pipefail`, GitHub's shell) with the step's `env:`,
`if:`, `continue-on-error:` and `timeout-minutes:`, and each upload-artifact / download-artifact
step applied to a local artifact store (OUT/artifacts) the way those actions lay files out
(upload: the least common ancestor of the search paths as the root, hidden files only with
`include-hidden-files`, no empty folders; download v8: by name, or by pattern into
path/<artifact>/ unless `merge-multiple` or exactly one artifact matched). The runner's own
set-up steps (checkout, setup-python and its probe, `pip install -e .`) are stood in for by a
`.venv/bin` holding `driftmatrix` and `python` of this checkout. A `${{ }}` expression the
rehearsal does not know stops the job with its text: the rehearsal cannot drift from the
workflow without saying so. extract runs by hand (it clones GitHub and asks GitHub's API): resolve,
extract of the local docs, the option history shipped, `state load` and `plan` as the workflow
runs them, then its two uploads read from the workflow.

The state branch's remote is a bare repository OUT/remotes/state.git that git itself puts in place
of https://github.com/o/r (`url.<path>.insteadOf` in OUT/gitconfig, GIT_CONFIG_GLOBAL), as
tests/workflow/test_save_state.py does; the PR jobs' clones of vllm-project/vllm and
vllm-project/recipes come from repositories made of --docs and --recipes the same way.

    python benchmarks/rehearsal.py OUT [--leg-hours 0.2] [--job-hours 0.4] [--max-legs 2]
        [--tier probe] [--daily-tier config] [--no-nightly] [--no-torch-index] [--docs DIR]
        [--recipes DIR] [--fail-publish] [--fix-envs-removed]

`--fail-publish`: publish fails for real (its `--site-dir site` is a regular file there, so mkdocs
cannot write the site), then "the next morning": `state load` of the state branch into
OUT/next-morning and the extract job's `plan` against its outcomes, to show what a failed publish
leaves (the day's outcomes and history on the branch, the finished jobs not planned again).
`--fix-envs-removed`: verify-fixes removes each build's environment as on GitHub's runners (here
that is the shared ~/.cache/driftmatrix/envs: off by default, the deviation is recorded).

Writes OUT/<job>/ (its folder, with _steps.json and a log per step), OUT/<job>.json (its figures)
and OUT/rehearsal.json; prints the table and what a maintainer sees the next morning.
`--no-nightly` drops the nightly target where wheels.vllm.ai cannot be reached, `--no-torch-index`
the PyTorch CPU index (this machine reaches PyPI only: pip would spend minutes on retries against it).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from driftmatrix.runner.builds.envs import _slug  # noqa: E402
from driftmatrix.runner.builds.targets import load  # noqa: E402
from driftmatrix.runner.settings import cache_dir  # noqa: E402

WORKFLOW = REPO / ".github" / "workflows" / "driftmatrix.yml"
DM = [sys.executable, "-m", "driftmatrix.cli"]
CORPUS = REPO.parent / "shared" / "corpus"
OWN_REPO = "o/r"
"""github.repository in the rehearsal: https://github.com/o/r is the local state remote."""

SET_UP = ("actions/checkout@", "actions/setup-python@", "actions/cache@")
"""Steps of the runner's set-up, stood in for by the job folder's .venv/bin."""


# ---------------------------------------------------------------- the workflow's steps, run here


def workflow() -> dict:
    import yaml

    return yaml.safe_load(WORKFLOW.read_text())


_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class UnknownExpression(RuntimeError):
    pass


def value(expr: str, ctx: dict, steps: dict) -> str:
    """One `${{ }}` expression: steps' outputs and outcomes, else the rehearsal's table."""
    m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
    if m:
        return steps.get(m[1], {}).get("outputs", {}).get(m[2], "")
    m = re.fullmatch(r"steps\.([\w-]+)\.outcome", expr)
    if m:
        return steps.get(m[1], {}).get("outcome", "")
    if expr in ctx:
        return ctx[expr]
    raise UnknownExpression(f"the workflow's expression `{expr}` is not known to the rehearsal")


def substitute(text, ctx: dict, steps: dict) -> str:
    return _EXPR.sub(lambda m: str(value(m[1], ctx, steps)), str(text))


def condition(cond, ctx: dict, steps: dict, failed: bool) -> bool:
    """A step's `if:`: always(), success() (the default), and `A == 'x'` / `A != 'x'` joined by &&."""
    if cond is None:
        return not failed
    text = _EXPR.fullmatch(str(cond).strip())
    text = text[1] if text else str(cond).strip()
    status_checked, result = False, True
    for part in (p.strip() for p in text.split("&&")):
        if part in ("always()", "success()", "failure()", "!cancelled()"):
            status_checked = True
            result &= {"always()": True, "!cancelled()": True, "success()": not failed, "failure()": failed}[part]
            continue
        m = re.fullmatch(r"(.+?)\s*(==|!=)\s*'([^']*)'", part)
        if not m:
            raise UnknownExpression(f"the workflow's condition `{part}` is not known to the rehearsal")
        left = str(value(m[1].strip(), ctx, steps))
        result &= (left == m[3]) if m[2] == "==" else (left != m[3])
    return result and (status_checked or not failed)


def _search_root(pattern: Path) -> Path:
    """The search path of one `path:` line: the part before its first glob segment."""
    parts = pattern.parts
    cut = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), len(parts))
    return Path(*parts[:cut])


def _files(pattern: Path, hidden: bool) -> list[Path]:
    """The files one `path:` line finds (a file, a folder's files, a glob); hidden ones (a name
    starting with a dot below the search path) only with `hidden`."""
    root = _search_root(pattern)
    hits = sorted(root.glob(str(pattern.relative_to(root)))) if root != pattern else [pattern]
    found = []
    for hit in hits:
        for f in [hit] if hit.is_file() else sorted(p for p in hit.rglob("*") if p.is_file()) if hit.is_dir() else []:
            if hidden or not any(part.startswith(".") for part in f.relative_to(root).parts):
                found.append(f)
    return found


def upload(workspace: Path, store: Path, with_: dict) -> str:
    """actions/upload-artifact (v4-v7): the files under `path:` (`!` lines excluded) into
    store/<name>/, relative to the least common ancestor of the search paths."""
    name = with_.get("name", "artifact")
    hidden = str(with_.get("include-hidden-files", "false")).lower() == "true"
    lines = [ln.strip() for ln in str(with_["path"]).splitlines() if ln.strip()]
    absolute = lambda ln: Path(os.path.normpath(workspace / ln))  # noqa: E731
    include = [absolute(ln) for ln in lines if not ln.startswith("!")]
    exclude = [absolute(ln[1:]) for ln in lines if ln.startswith("!")]
    files = {f for pattern in include for f in _files(pattern, hidden)}
    files -= {f for pattern in exclude for f in _files(pattern, True)}
    searches = [_search_root(pattern) for pattern in include]
    if len(searches) > 1:
        root = Path(os.path.commonpath([str(s) for s in searches]))
    elif len(files) == 1 and searches[0] in files:
        root = searches[0].parent
    else:
        root = searches[0]
    if not files:
        if with_.get("if-no-files-found", "warn") == "error":
            raise RuntimeError(f"upload-artifact {name}: no files found")
        return f"upload {name}: no files, nothing uploaded"
    dest = store / name
    if dest.exists():
        if str(with_.get("overwrite", "false")).lower() != "true":
            raise RuntimeError(f"upload-artifact {name}: an artifact of that name exists (no overwrite)")
        shutil.rmtree(dest)
    for f in files:
        (dest / f.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dest / f.relative_to(root))
    return f"upload {name}: {len(files)} file(s) from {root}"


def download(workspace: Path, store: Path, with_: dict) -> str:
    """actions/download-artifact v8.0.1: by name into `path`; by pattern into path/<name>/ unless
    merge-multiple or exactly one matched (src/download-artifact.ts at 3e5f45b)."""
    path = workspace / with_.get("path", ".")
    if "name" in with_:
        if not (store / with_["name"]).is_dir():
            raise RuntimeError(f"download-artifact: Artifact '{with_['name']}' not found")
        found = [with_["name"]]
        single = True
    else:
        found = sorted(p.name for p in store.iterdir() if fnmatch.fnmatchcase(p.name, with_.get("pattern", "*")))
        single = str(with_.get("merge-multiple", "false")).lower() == "true" or len(found) == 1
    for name in found:
        shutil.copytree(store / name, path if single else path / name, dirs_exist_ok=True)
    return f"download {', '.join(found) or 'nothing'} into {path.relative_to(workspace)}" + (
        "" if single or not found else "/<name>"
    )


SHIM = """#!{python}
import sys
drop, argv, kept, dropped = {drop!r}, sys.argv[1:], [], []
while argv:
    arg = argv.pop(0)
    if arg.split("=", 1)[0] in drop:
        dropped.append(arg if "=" in arg or not argv else f"{{arg}} {{argv.pop(0)}}")
    else:
        kept.append(arg)
if dropped:
    print(f"rehearsal: dropped {{', '.join(dropped)}} (--drop-option: not an option of this checkout's CLI)", file=sys.stderr)
from driftmatrix.cli import main
sys.exit(main(kept))
"""


def shims(workspace: Path, drop: list[str] = ()) -> Path:
    """The runner's `pip install -e .` stood in for: .venv/bin/{driftmatrix,python} of this checkout;
    `drop`: options (each with its value) the driftmatrix shim leaves out (--drop-option)."""
    bin_dir = workspace / ".venv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "driftmatrix").write_text(SHIM.format(python=sys.executable, drop=sorted(drop)))
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    for name in ("driftmatrix", "python"):
        (bin_dir / name).chmod(0o755)
    return bin_dir


def set_up(step: dict) -> bool:
    return (
        str(step.get("uses", "")).startswith(SET_UP)
        or step.get("id") == "python"
        or "pip install -e ." in str(step.get("run", ""))
    )


def run_job(spec: dict) -> int:
    """One job of the workflow in spec['workspace'] (its steps from the YAML): 0 when it succeeded."""
    wf = workflow()
    job = wf["jobs"][spec["job"]]
    ws, store, ctx = Path(spec["workspace"]), Path(spec["store"]), spec["ctx"]
    logs = ws / "_logs"
    logs.mkdir(exist_ok=True)
    (ws / "_temp").mkdir(exist_ok=True)
    bin_dir = shims(ws, spec.get("drop", []))
    env = {
        **os.environ,
        **{k: str(v) for k, v in (wf.get("env") or {}).items()},
        **{k: str(v) for k, v in (job.get("env") or {}).items()},
        **spec.get("env", {}),
        "GITHUB_WORKSPACE": str(ws),
        "RUNNER_TEMP": str(ws / "_temp"),
        "PYTHONPATH": str(REPO),
        "GITHUB_STEP_SUMMARY": str(ws / "_summary.md"),
    }
    path = [str(bin_dir)]
    steps: dict = {}
    rows, failed = [], False
    for n, step in enumerate(job["steps"]):
        w = step.get("with") or {}
        label = (
            f"{step['uses'].split('@')[0]} {w.get('name') or w.get('pattern') or ''}".strip() if "uses" in step else ""
        )
        name = substitute(step.get("name") or label or step.get("run", "").splitlines()[0], ctx, steps)
        row = {"step": name[:120]}
        rows.append(row)
        if set_up(step):
            row["outcome"] = "stood in"
            continue
        try:
            run = condition(step.get("if"), ctx, steps, failed)
        except UnknownExpression as err:
            row.update(outcome="failure", error=str(err))
            failed = True
            continue
        if not run:
            row["outcome"] = "skipped"
            steps.setdefault(step.get("id", f"_{n}"), {})["outcome"] = "skipped"
            continue
        t0 = time.monotonic()
        try:
            if "uses" in step:
                with_ = {k: substitute(v, ctx, steps) for k, v in (step.get("with") or {}).items()}
                uses = step["uses"]
                if uses.startswith("actions/upload-artifact@"):
                    row["log"] = upload(ws, store, with_)
                elif uses.startswith("actions/download-artifact@"):
                    row["log"] = download(ws, store, with_)
                else:
                    raise UnknownExpression(f"an action the rehearsal does not stand in for: {uses}")
                outcome = "success"
            else:
                step_env = {k: substitute(v, ctx, steps) for k, v in (step.get("env") or {}).items()}
                output, gpath = ws / "_temp" / f"output-{n}", ws / "_temp" / f"path-{n}"
                output.write_text("")
                gpath.write_text("")
                script = ws / "_temp" / f"step-{n}.sh"
                script.write_text(substitute(step["run"], ctx, steps))
                log = logs / f"{n:02d}-{re.sub(r'[^A-Za-z0-9]+', '-', name)[:60].strip('-')}.log"
                timeout = float(step.get("timeout-minutes", 360)) * 60
                with log.open("w") as fh:
                    try:
                        proc = subprocess.run(
                            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                            cwd=ws,
                            stdout=fh,
                            stderr=subprocess.STDOUT,
                            timeout=timeout,
                            env={
                                **env,
                                **step_env,
                                "GITHUB_OUTPUT": str(output),
                                "GITHUB_PATH": str(gpath),
                                "PATH": ":".join([*path, env["PATH"]]),
                            },
                        )
                        rc = proc.returncode
                    except subprocess.TimeoutExpired:
                        rc = 124
                outs = dict(ln.split("=", 1) for ln in output.read_text().splitlines() if "=" in ln)
                path = [ln for ln in gpath.read_text().splitlines() if ln][::-1] + path
                row.update(
                    rc=rc, log_file=str(log.relative_to(ws)), tail=log.read_text(errors="replace").splitlines()[-12:]
                )
                steps.setdefault(step.get("id", f"_{n}"), {})["outputs"] = outs
                outcome = "success" if rc == 0 else "failure"
        except (RuntimeError, OSError) as err:
            outcome = "failure"
            row["error"] = str(err)
        row.update(outcome=outcome, wall_s=round(time.monotonic() - t0, 1))
        if outcome == "failure" and step.get("continue-on-error"):
            row["outcome"] = "failure (continue-on-error)"
        elif outcome == "failure":
            failed = True
        steps.setdefault(step.get("id", f"_{n}"), {})["outcome"] = outcome
    (ws / "_steps.json").write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


# ---------------------------------------------------------------- the rehearsal


def measured(out: Path, name: str, folder: Path, command: list, watch: list[Path]) -> dict:
    """Run `command` in `folder` under leg_disk.py; its figures (and the exit status)."""
    figures = out / f"{name}.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "leg_disk.py"),
            "--every",
            "2",
            *(a for w in [folder, *watch] for a in ("--watch", str(w))),
            "--json",
            str(figures),
            "--",
            *map(str, command),
        ],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    (folder / f"{name}.log").write_text(proc.stdout + proc.stderr)
    report = json.loads(figures.read_text()) if figures.exists() else {"status": proc.returncode}
    report["job"] = name
    return report


def workflow_job(
    out: Path, name: str, job: str, ctx: dict, env: dict, watch: list[Path], prepare=None, drop: list[str] = ()
) -> dict:
    """The workflow's job `job` in OUT/<name>/, measured."""
    folder = out / name
    folder.mkdir()
    if prepare:
        prepare(folder)
    spec = out / f"{name}.spec.json"
    spec.write_text(
        json.dumps(
            {
                "job": job,
                "workspace": str(folder),
                "store": str(out / "artifacts"),
                "ctx": ctx,
                "env": env,
                "drop": list(drop),
            },
            indent=1,
        )
    )
    report = measured(
        out, name, folder, [sys.executable, str(Path(__file__).resolve()), "--job-spec", str(spec)], watch
    )
    steps = json.loads((folder / "_steps.json").read_text()) if (folder / "_steps.json").exists() else []
    report["steps"] = [
        {k: s.get(k) for k in ("step", "outcome", "rc", "wall_s", "log", "error") if s.get(k) is not None}
        for s in steps
    ]
    return report


def env_dirs(targets: Path, names: list[str] | None = None) -> list[Path]:
    root = cache_dir() / "envs"
    return [
        root / f"{_slug(t.pip)}-{t.key()}"
        for t in load(targets).targets
        if t.pip and (names is None or t.name in names)
    ]


def bash(script: str) -> list[str]:
    return ["bash", "-euo", "pipefail", "-c", script]


def git_env(out: Path) -> dict:
    """github.com's repositories of the rehearsal, put in place by git itself."""
    remotes = out / "remotes"
    config = out / "gitconfig"
    config.write_text(
        "".join(
            f'[url "file://{remotes / local}"]\n\tinsteadOf = https://github.com/{repo}\n'
            for repo, local in (
                (OWN_REPO, "state.git"),
                ("vllm-project/vllm", "vllm.git"),
                ("vllm-project/recipes", "recipes.git"),
            )
        )
        + "[user]\n\tname = rehearsal\n\temail = rehearsal@example.invalid\n"
    )
    return {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1", "RUNNER_ENVIRONMENT": "self-hosted"}


def remotes(out: Path, docs: Path, recipes: Path) -> None:
    """The state branch's remote (empty: a first run) and the docs repositories the PR jobs clone."""
    r = out / "remotes"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(r / "state.git")], check=True)
    for name, tree in (("vllm", docs), ("recipes", recipes)):
        work = r / f"{name}-work"
        shutil.copytree(tree, work, ignore=shutil.ignore_patterns(".git"))
        git = ["git", "-C", str(work), "-c", "user.name=r", "-c", "user.email=r@example.invalid"]
        subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", f"{name} as of the corpus"], check=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(work), str(r / f"{name}.git")], check=True)
        shutil.rmtree(work)


def plan_args(args, previous: str, output: str, detail: bool = False) -> str:
    """extract's `plan` (the workflow's arguments for a CPU run, plus the rehearsal's size limits);
    `detail`: with each leg's jobs listed (to compare two plans)."""
    daily = f"--daily-tier {args.daily_tier} " if args.daily_tier else ""
    return (
        f"{' '.join(DM)} plan snippets.json --targets targets.resolved.toml {daily}--tier {args.tier} "
        f"--shards 1 --leg-hours {args.leg_hours} --job-hours {args.job_hours} --max-legs {args.max_legs} "
        f"--stand-ins tiny --previous {previous} --require-pinned {'--detail ' if detail else ''}-o {output} > /dev/null"
    )


def extract_job(out: Path, args, env: dict) -> tuple[Path, dict]:
    job = out / "extract"
    job.mkdir(parents=True)
    source = (REPO / "runner/data/targets-ci-cpu.toml").read_text()
    if args.no_torch_index:  # download.pytorch.org is not reachable from this machine: torch from PyPI
        source = source.replace('index_urls = ["https://download.pytorch.org/whl/cpu"]\n', "").replace(
            ', "https://download.pytorch.org/whl/cpu"', ""
        )
    if args.no_nightly:
        source = source.replace(source[source.index("[targets.nightly]") : source.index("[targets.cpu]")], "")
    (job / "targets.toml").write_text(source)
    dm = " ".join(DM)
    docs_step = next(s["run"] for s in workflow()["jobs"]["extract"]["steps"] if "stable=$(" in str(s.get("run")))
    stable = next(
        ln.strip() for ln in docs_step.splitlines() if ln.strip().startswith("stable=$(")
    )  # the workflow's own
    script = f"""export PATH={shims(job)}:$PATH
{dm} resolve --targets targets.toml -o targets.resolved.toml
{stable}
{dm} extract {args.docs} {args.recipes} --vllm-version "$stable" --stable "$stable" -q -o snippets.json
cp {REPO}/flaghistory/data/flag-history.json flag-history.json
{dm} state load --remote "https://github.com/{OWN_REPO}" -d state
{plan_args(args, "state/outcomes.jsonl", "plan.json")}
"""
    report = measured(out, "extract", job, bash(script), [])
    if report.get("status") == 0:  # its uploads, as the workflow writes them
        store = out / "artifacts"
        store.mkdir(exist_ok=True)
        report["uploads"] = [
            upload(job, store, s["with"])
            for s in workflow()["jobs"]["extract"]["steps"]
            if str(s.get("uses", "")).startswith("actions/upload-artifact@")
        ]
    return job, report


def base_ctx(args, tier: str) -> dict:
    """The values of the workflow's expressions in a scheduled run on the default branch, CPU mode."""
    return {
        "github.repository": OWN_REPO,
        "github.token": "",
        "secrets.HF_TOKEN": "",
        "vars.DRIFTMATRIX_CACHE_DIR": str(cache_dir()),
        "vars.DRIFTMATRIX_WEIGHTS_BUDGET_GB": "",
        "vars.DRIFTMATRIX_TWIN_CACHE_GB || (needs.extract.outputs.mode == 'cpu' && 'free' || '')": "free",
        "vars.DRIFTMATRIX_MAX_FIXES || '40'": "40",
        "needs.extract.outputs.tier": tier,
        "needs.extract.outputs.mode": "cpu" if args.fix_envs_removed else "cpu (rehearsal: environments kept)",
        "needs.extract.outputs.publish": "true",
        "vars.DRIFTMATRIX_SITE_URL": "",
        "env.PYTHON_VERSION": "3.11",
        "runner.temp": "_temp",
        "needs.extract.outputs.apply_prs": "false",
        "needs.extract.outputs.apply_prs == 'true' && secrets.DRIFTMATRIX_PR_TOKEN || ''": "",
        "needs.deploy.outputs.page_url": "",
        "vars.DRIFTMATRIX_COMMITTER": "",
    }


def count_lines(path: Path) -> int:
    return sum(1 for ln in path.read_text().splitlines() if ln.strip()) if path.exists() else 0


def next_morning(out: Path, inputs: Path, args, first_plan: dict, legs: list[Path]) -> dict:
    """What the next run's extract finds on the state branch, and what it plans."""
    day = out / "next-morning"
    day.mkdir()
    for name in ("snippets.json", "targets.resolved.toml"):
        shutil.copy(inputs / name, day / name)
    load_out = subprocess.run(
        [*DM, "state", "load", "--remote", f"https://github.com/{OWN_REPO}", "-d", "state"],
        cwd=day,
        capture_output=True,
        text=True,
    )
    plan = subprocess.run(
        bash(plan_args(args, "state/outcomes.jsonl", "plan.json")), cwd=day, capture_output=True, text=True
    )
    # both plans with their jobs listed: the first against what extract planned from, the next against the branch
    shutil.copy(inputs / "state" / "outcomes.jsonl", day / "first-previous.jsonl")
    for previous, output in (
        ("first-previous.jsonl", "first-detail.json"),
        ("state/outcomes.jsonl", "next-detail.json"),
    ):
        subprocess.run(bash(plan_args(args, previous, output, detail=True)), cwd=day, capture_output=True, text=True)
    git = ["git", "--git-dir", str(out / "remotes" / "state.git")]
    log = subprocess.run([*git, "log", "--format=%H %cI %s", "driftmatrix-state"], capture_output=True, text=True)
    tree = subprocess.run([*git, "ls-tree", "-r", "--name-only", "driftmatrix-state"], capture_output=True, text=True)
    nxt = json.loads((day / "plan.json").read_text()) if plan.returncode == 0 else {}
    saved = (
        [json.loads(ln) for ln in (day / "state" / "outcomes.jsonl").read_text().splitlines() if ln.strip()]
        if (day / "state" / "outcomes.jsonl").exists()
        else []
    )
    key = lambda o: (o["snippet_id"], o.get("variant"), o["target"]["name"], o["tier"])  # noqa: E731
    done = {key(o) for o in saved}
    ran = set()  # the jobs the legs finished today (their outcome files hold the previous state too)
    for leg in legs:
        ran |= {key(json.loads(ln)) for ln in leg.read_text().splitlines() if ln.strip()}

    def jobs(name: str) -> set:
        detail = json.loads((day / name).read_text()) if (day / name).exists() else {}
        return {(k[0], k[1], r["target"], k[2]) for r in detail.get("runs", []) for k in r.get("keys", [])}

    first_jobs, next_jobs = jobs("first-detail.json"), jobs("next-detail.json")
    snapshots = sorted((day / "state" / "history").glob("matrix-*.json"))
    judged = {}
    if snapshots:
        for e in json.loads(snapshots[-1].read_text()).get("snippets", {}).values():
            judged[e["judgement"]] = judged.get(e["judgement"], 0) + 1
    return {
        "state_load": (load_out.stdout + load_out.stderr).strip(),
        "state_branch": {
            "commits": [ln for ln in log.stdout.splitlines()],
            "files": tree.stdout.split(),
            "outcomes": len(saved),
            "history_snapshots": len(snapshots),
            "newest_snapshot": snapshots[-1].name if snapshots else None,
            "judgements_of_newest_snapshot": judged,
        },
        "plan_status": plan.returncode,
        "plan_error": plan.stderr.strip()[-2000:],
        **{
            name: {k: p.get(k) for k in ("jobs", "by_target", "deferred", "reused", "estimates", "planned_hours")}
            | {"legs": p.get("entries")}
            for name, p in (("first_plan", first_plan), ("next_plan", nxt))
        },
        "finished_today": len(ran & first_jobs),
        "finished_and_saved": len(ran & first_jobs & done),
        "finished_but_planned_again": len(ran & first_jobs & next_jobs),
        "first_plan_jobs_listed": len(first_jobs),
        "next_plan_jobs_listed": len(next_jobs),
    }


def publish_error(out: Path) -> dict:
    steps = json.loads((out / "publish" / "_steps.json").read_text())
    build = next((s for s in steps if s["step"].startswith("Build the site")), {})
    text = (out / "publish" / build["log_file"]).read_text(errors="replace") if build.get("log_file") else ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = [ln for ln in lines if ln.startswith("driftmatrix publish")][:1] + lines[-1:]
    return {
        "step": build.get("step"),
        "exit_status": build.get("rc"),
        "outcome": build.get("outcome"),
        "first_lines": first,
        "last_lines": lines[-8:],
    }


def morning_text(summary: dict) -> str:
    m, p = summary["next_morning"], summary.get("publish_failure") or {}
    sb = m["state_branch"]
    head = sb["commits"][0].split(" ", 2) if sb["commits"] else ["(none)", "", ""]
    table = [
        "job                      result    wall s  peak disk GB  peak memory GB",
        *(
            f"{j['job']:<24} {j['result']:<9} {j.get('wall_s') or '-':>6}  {j.get('peak_disk_gb') or '-':>12}  "
            f"{j.get('peak_memory_gb') or '-':>14}"
            for j in summary["jobs"]
        ),
        f"total {summary.get('total_s')} s; peak disk {summary['peak_disk_gb']} GB"
        + "".join(f"\n  deviation: {d}" for d in summary.get("deviations", [])),
        "",
    ]
    out = [
        *table,
        "What a maintainer sees the next morning",
        "=" * 39,
        "jobs of the run: "
        + ", ".join(
            f"{j['job']} {j['result']}" + (f" ({j['wall_s']} s)" if j.get("wall_s") else "") for j in summary["jobs"]
        ),
    ]
    if p:
        out += [
            f"publish FAILED (exit {p['exit_status']} of its step '{p['step']}'):",
            *(f"    {ln}" for ln in p["first_lines"]),
            "deploy and pull-requests: skipped (they need a successful publish)",
        ]
    out += [
        f"state branch driftmatrix-state at {head[0][:12]} ({head[1]}: {head[2]}), {len(sb['commits'])} commit(s)",
        f"    {sb['outcomes']} outcomes, {sb['history_snapshots']} history snapshot(s) "
        f"(newest {sb['newest_snapshot']}: {', '.join(f'{v} {k}' for k, v in sb['judgements_of_newest_snapshot'].items())})",
        f"    files: {', '.join(sb['files'])}",
        f"next morning's state load: {m['state_load']}",
        f"first plan: {m['first_plan']['jobs']} jobs in {len(m['first_plan']['legs'] or [])} leg(s) "
        f"({m['first_plan']['by_target']}), {m['first_plan']['deferred']} deferred; estimates {m['first_plan']['estimates']}",
        f"legs finished {m['finished_today']} of them; {m['finished_and_saved']} on the state branch",
        f"next plan:  {m['next_plan']['jobs']} jobs in {len(m['next_plan']['legs'] or [])} leg(s) "
        f"({m['next_plan']['by_target']}), {m['next_plan']['deferred']} deferred, {m['next_plan']['reused']} reused; "
        f"estimates {m['next_plan']['estimates']}; finished jobs planned again: {m['finished_but_planned_again']}",
    ]
    return "\n".join(out) + "\n"


def main() -> int:
    if sys.argv[1:2] == ["--job-spec"]:  # one workflow job (run by the rehearsal under leg_disk.py)
        return run_job(json.loads(Path(sys.argv[2]).read_text()))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--leg-hours", type=float, default=0.2)
    ap.add_argument("--job-hours", type=float, default=0.4)
    ap.add_argument("--max-legs", type=int, default=2)
    ap.add_argument("--tier", default="probe")
    ap.add_argument("--daily-tier", default="config", help="empty: none (as the workflow's plan step)")
    ap.add_argument("--no-nightly", action="store_true")
    ap.add_argument("--no-torch-index", action="store_true", help="leave out the PyTorch CPU index (unreachable here)")
    ap.add_argument("--docs", type=Path, default=CORPUS / "vllm-docs" / "0.33.0")
    ap.add_argument("--recipes", type=Path, default=next((CORPUS / "recipes").iterdir(), CORPUS / "recipes"))
    ap.add_argument(
        "--fail-publish",
        action="store_true",
        help="publish fails for real (its site folder is a regular file), then the next morning",
    )
    ap.add_argument(
        "--drop-option",
        action="append",
        default=[],
        metavar="OPTION",
        help="an option (with its value) the workflow passes to driftmatrix that this checkout's CLI "
        "does not have yet: left out by the job's driftmatrix, and recorded (repeatable)",
    )
    ap.add_argument(
        "--fix-envs-removed",
        action="store_true",
        help="verify-fixes removes each build's environment, as on GitHub (the shared cache's!)",
    )
    args = ap.parse_args()
    out = args.out = args.out.resolve()  # each job runs in its own folder
    out.mkdir(parents=True, exist_ok=False)
    t0 = time.monotonic()
    env = git_env(out)
    os.environ.update(env)  # git's fake for github.com, for every job and the next morning
    remotes(out, args.docs, args.recipes)
    inputs, extract = extract_job(out, args, env)
    table = [extract]
    if extract.get("status") != 0:
        print(json.dumps(extract, indent=1))
        return 1
    plan = json.loads((inputs / "plan.json").read_text())
    ctx = base_ctx(args, args.tier)
    cache = cache_dir()
    targets = inputs / "targets.resolved.toml"
    for entry in plan["runs"]:  # the matrix: one leg per entry
        watch = env_dirs(targets, [entry["target"]]) + [cache / "standins", cache / "hub"]
        table.append(
            workflow_job(
                out,
                f"run-{entry['id']}",
                "run",
                {**ctx, "matrix.entry": entry["id"]},
                env,
                watch,
                drop=args.drop_option,
            )
        )
    table.append(
        workflow_job(
            out,
            "verify-fixes",
            "verify-fixes",
            ctx,
            env,
            env_dirs(targets) + [cache / "standins", cache / "hub"],
            drop=args.drop_option,
        )
    )
    table.append(
        workflow_job(out, "save-state", "save-state", ctx, env, [out / "remotes" / "state.git"], drop=args.drop_option)
    )
    save_ok = table[-1].get("status") == 0
    prepare = (lambda folder: (folder / "site").write_text("")) if args.fail_publish else None
    if save_ok:  # publish: `!cancelled() && needs.save-state.result == 'success'`
        table.append(workflow_job(out, "publish", "publish", ctx, env, [], prepare, drop=args.drop_option))
    published = save_ok and table[-1].get("status") == 0
    for repo in ("vllm-project/vllm", "vllm-project/recipes"):  # `needs.publish.result == 'success'`
        if published:
            table.append(
                workflow_job(
                    out,
                    f"pull-requests-{repo.split('/')[1]}",
                    "pull-requests",
                    {**ctx, "matrix.repo": repo},
                    env,
                    [],
                    drop=args.drop_option,
                )
            )
        else:
            table.append(
                {"job": f"pull-requests-{repo.split('/')[1]}", "status": None, "skipped": "publish did not succeed"}
            )
    for row in table:
        row["result"] = "skipped" if row.get("status") is None else "success" if row["status"] == 0 else "failure"
    legs = sorted(out.glob("run-*/outcomes-*.jsonl"))
    summary = {
        "plan": {
            k: plan.get(k)
            for k in (
                "jobs",
                "by_target",
                "deferred",
                "deferred_by_tier",
                "planned_hours",
                "estimates",
                "rotation_days",
                "entries",
            )
        },
        "jobs": [
            {
                k: r.get(k)
                for k in (
                    "job",
                    "result",
                    "status",
                    "wall_s",
                    "peak_disk_gb",
                    "peak_memory_gb",
                    "steps",
                    "uploads",
                    "skipped",
                )
                if r.get(k) is not None or k == "status"
            }
            for r in table
        ],
        "peak_disk_gb": max((r.get("peak_disk_gb") or 0) for r in table),
        "deviations": (
            []
            if args.fix_envs_removed
            else [
                "verify-fixes keeps each build's environment (the workflow removes it on CPU runners: here that "
                "would be the shared cache); its peak disk counts both builds' environments"
            ]
        )
        + [
            f"{o} (with its value) left out of the workflow's driftmatrix calls: not an option of this "
            "checkout's CLI (--drop-option)"
            for o in args.drop_option
        ],
    }
    if args.fail_publish:
        summary["publish_failure"] = publish_error(out) if (out / "publish" / "_steps.json").exists() else None
    summary["next_morning"] = next_morning(out, inputs, args, plan, legs)
    summary["total_s"] = round(time.monotonic() - t0, 1)
    summary["command"] = " ".join(sys.argv[1:])
    (out / "rehearsal.json").write_text(json.dumps(summary, indent=1))
    text = morning_text(summary)
    (out / "rehearsal.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
