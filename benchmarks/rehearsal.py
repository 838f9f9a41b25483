"""A dress rehearsal of the scheduled workflow on this machine (issue 31): its jobs in the graph's
order, each in a clean folder holding only the artifacts the graph hands it — extract → each run
leg → verify-fixes → publish → pull-requests (dry run) — with the CPU fallback's targets file
resolved against the real package index. Each job is measured by benchmarks/leg_disk.py (wall
time, peak memory of its process tree, peak disk of its folder plus the environments and twins
it made or used, as a fresh runner would hold them).

    python benchmarks/rehearsal.py OUT [--leg-hours 0.2] [--job-hours 0.4] [--max-legs 2]
        [--tier probe] [--daily-tier config] [--no-nightly] [--docs DIR] [--recipes DIR]

Writes OUT/<job>/ (its folder), OUT/<job>.json (its figures) and OUT/rehearsal.json (the table
and the judgement counts of the published matrix). `--no-nightly` drops the nightly target where
wheels.vllm.ai cannot be reached, `--no-torch-index` the PyTorch CPU index (this machine reaches
PyPI only: pip would spend minutes on retries against it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runner.builds.envs import _slug  # noqa: E402
from runner.settings import cache_dir  # noqa: E402
from runner.builds.targets import load  # noqa: E402

DM = [sys.executable, "-m", "driftmatrix.cli"]
CORPUS = REPO.parent / "shared" / "corpus"


TWIN_CACHE_GB = "2"
"""What the workflow sets on GitHub's runners for the steps that build twins (DRIFTMATRIX_TWIN_CACHE_GB)."""


def measured(out: Path, name: str, folder: Path, command: list, watch: list[Path], twins: bool = False) -> dict:
    """Run `command` in `folder` under leg_disk.py; its figures (and the exit status). `twins`: a
    step that builds twins, with the workflow's limit on them."""
    figures = out / f"{name}.json"
    env = {**os.environ, "DRIFTMATRIX_TWIN_CACHE_GB": TWIN_CACHE_GB} if twins else None
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "leg_disk.py"), "--every", "2",
                           *(a for w in [folder, *watch] for a in ("--watch", str(w))), "--json", str(figures),
                           "--", *map(str, command)], cwd=folder, capture_output=True, text=True, env=env)
    (folder / f"{name}.log").write_text(proc.stdout + proc.stderr)
    report = json.loads(figures.read_text()) if figures.exists() else {"status": proc.returncode}
    report["job"] = name
    return report


def env_dirs(targets: Path, names: list[str] | None = None) -> list[Path]:
    root = cache_dir() / "envs"
    return [root / f"{_slug(t.pip)}-{t.key()}" for t in load(targets).targets
            if t.pip and (names is None or t.name in names)]


def bash(script: str) -> list[str]:
    return ["bash", "-euo", "pipefail", "-c", script]


def extract_job(out: Path, args) -> tuple[Path, dict]:
    job = out / "extract"
    job.mkdir(parents=True)
    source = (REPO / "runner/data/targets-ci-cpu.toml").read_text()
    if args.no_torch_index:  # download.pytorch.org is not reachable from this machine: torch from PyPI
        source = source.replace('index_urls = ["https://download.pytorch.org/whl/cpu"]\n', "").replace(
            ', "https://download.pytorch.org/whl/cpu"', "")
    if args.no_nightly:
        source = source.replace(source[source.index("[targets.nightly]"):source.index("[targets.cpu]")], "")
    (job / "targets.toml").write_text(source)
    dm = " ".join(DM)
    script = f"""
{dm} resolve --targets targets.toml -o targets.resolved.toml
stable=$({sys.executable} -c "from pathlib import Path; from runner.builds.targets import stable_pin; print(stable_pin(Path('targets.resolved.toml')))")
{dm} extract {args.docs} {args.recipes} --vllm-version "$stable" --stable "$stable" -q -o snippets.json
cp {REPO}/flaghistory/data/flag-history.json flag-history.json
mkdir -p state && : > state/outcomes.jsonl
{dm} plan snippets.json --targets targets.resolved.toml --tier {args.tier} --daily-tier {args.daily_tier} \\
  --leg-hours {args.leg_hours} --job-hours {args.job_hours} --max-legs {args.max_legs} --stand-ins tiny \\
  --previous state/outcomes.jsonl --require-pinned -o plan.json > /dev/null
"""
    report = measured(out, "extract", job, bash(script), [])
    return job, report


def leg_job(out: Path, inputs: Path, entry: dict) -> dict:
    job = out / f"leg-{entry['id']}"
    job.mkdir()
    for name in ("snippets.json", "plan.json", "targets.resolved.toml", "flag-history.json", "state"):
        (shutil.copytree if (inputs / name).is_dir() else shutil.copy)(inputs / name, job / name)
    script = (f"cp state/outcomes.jsonl outcomes.jsonl\n{' '.join(DM)} run --plan plan.json --entry {entry['id']} "
              "-o outcomes.jsonl --junit junit.xml --workdir work --format json > run.jsonl")
    watch = env_dirs(job / "targets.resolved.toml", [entry["target"]]) + [cache_dir() / "standins"]
    return measured(out, f"leg-{entry['id']}", job, bash(script), watch, twins=True)


def fixes_job(out: Path, inputs: Path, legs: list[Path], tier: str) -> list[dict]:
    """The fix check as the workflow runs it on GitHub's runners: one build at a time, its
    environment removed before the next (so each build is measured with its own environment only)."""
    job = out / "verify-fixes"
    (job / "artifacts" / "inputs").mkdir(parents=True)
    for name in ("snippets.json", "targets.resolved.toml", "flag-history.json", "state"):
        (shutil.copytree if (inputs / name).is_dir() else shutil.copy)(inputs / name, job / "artifacts/inputs" / name)
    for leg in legs:
        (job / "artifacts" / f"outcomes-{leg.name[4:]}").mkdir()
        shutil.copy(leg / "outcomes.jsonl", job / "artifacts" / f"outcomes-{leg.name[4:]}" / "outcomes.jsonl")
    dm = " ".join(DM)
    history = "export DRIFTMATRIX_FLAG_HISTORY=artifacts/inputs/flag-history.json\n"
    script = f"""shopt -s nullglob
{history}{dm} merge artifacts/inputs/state/outcomes.jsonl artifacts/outcomes-*/outcomes.jsonl -o merged.jsonl
{dm} fixes --snippets artifacts/inputs/snippets.json --outcomes merged.jsonl -o fixes.json
cp merged.jsonl fixes-outcomes.jsonl
"""
    rows = [measured(out, "verify-fixes", job, bash(script), [])]
    for target in load(inputs / "targets.resolved.toml").targets:
        script = (f"{history}{dm} run fixes.json --targets artifacts/inputs/targets.resolved.toml --target "
                  f"{target.name} --tier {tier} --stand-ins tiny -o fixes-outcomes.jsonl --workdir work "
                  f"--format json > run-{target.name}.jsonl || true")
        watch = env_dirs(inputs / "targets.resolved.toml", [target.name]) + [cache_dir() / "standins"]
        rows.append(measured(out, f"verify-fixes-{target.name}", job, bash(script), watch, twins=True))
    return rows


def publish_job(out: Path, inputs: Path, legs: list[Path], fixes: Path) -> dict:
    job = out / "publish"
    job.mkdir()
    dm = " ".join(DM)
    outcomes = " ".join(str(leg / "outcomes.jsonl") for leg in legs)
    script = f"""export DRIFTMATRIX_FLAG_HISTORY={inputs}/flag-history.json
{dm} merge {inputs}/state/outcomes.jsonl {outcomes} {fixes}/fixes-outcomes.jsonl -o merged.jsonl
{dm} publish --snippets {inputs}/snippets.json --outcomes merged.jsonl --fixes {fixes}/fixes.json \\
  --run-history history --site-dir site
"""
    return measured(out, "publish", job, bash(f"export GITHUB_STEP_SUMMARY={job}/summary.md\n" + script), [])


def pr_job(out: Path, inputs: Path, published: Path, fixes: Path, docs: Path) -> dict:
    job = out / "pull-requests"
    job.mkdir()
    checkout = job / "docs-checkout"
    shutil.copytree(docs, checkout / "docs")  # the docs as a clone of vLLM holds them (a git repository)
    git = ["git", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "-c", "user.name=r", "-c", "user.email=r@example.invalid", "commit", "-qm", "docs"],
                   check=True)
    script = (f"export DRIFTMATRIX_FLAG_HISTORY={inputs}/flag-history.json\n{' '.join(DM)} pr --repo "
              f"vllm-project/vllm --checkout docs-checkout --snippets {inputs}/snippets.json --outcomes "
              f"{published}/merged.jsonl --fixes {fixes}/fixes.json 2>&1 | tee pr.log")
    return measured(out, "pull-requests", job, bash(script), [])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--leg-hours", type=float, default=0.2)
    ap.add_argument("--job-hours", type=float, default=0.4)
    ap.add_argument("--max-legs", type=int, default=2)
    ap.add_argument("--tier", default="probe")
    ap.add_argument("--daily-tier", default="config")
    ap.add_argument("--no-nightly", action="store_true")
    ap.add_argument("--no-torch-index", action="store_true", help="leave out the PyTorch CPU index (unreachable here)")
    ap.add_argument("--docs", type=Path, default=CORPUS / "vllm-docs" / "0.33.0")
    ap.add_argument("--recipes", type=Path, default=next((CORPUS / "recipes").iterdir(), CORPUS / "recipes"))
    args = ap.parse_args()
    args.out = args.out.resolve()  # each job runs in its own folder
    args.out.mkdir(parents=True, exist_ok=False)
    t0 = time.monotonic()
    inputs, extract = extract_job(args.out, args)
    table = [extract]
    plan = json.loads((inputs / "plan.json").read_text())
    for entry in plan["runs"]:
        table.append(leg_job(args.out, inputs, entry))
    legs = sorted(args.out.glob("leg-*/"))
    table.extend(fixes_job(args.out, inputs, legs, args.tier))
    table.append(publish_job(args.out, inputs, legs, args.out / "verify-fixes"))
    table.append(pr_job(args.out, inputs, args.out / "publish", args.out / "verify-fixes", args.docs))
    summary = {"plan": {k: plan[k] for k in ("jobs", "by_target", "deferred", "deferred_by_tier", "planned_hours",
                                             "estimates", "rotation_days")},
               "jobs": [{k: r.get(k) for k in ("job", "status", "wall_s", "peak_disk_gb", "peak_memory_gb")}
                        for r in table], "total_s": round(time.monotonic() - t0, 1)}
    (args.out / "rehearsal.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
