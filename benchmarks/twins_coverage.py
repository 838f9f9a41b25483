"""Twin coverage on the vLLM 0.33.0 docs + recipes (issue 22): which documented commands get a
stand-in twin offline, and how far those twins get on the CPU builds.

Steps, all offline (no hub; HF_HUB_OFFLINE=1):
1. extract the 0.33.0 docs tree and the recipes snapshot; take every command that names a model
   (not a placeholder) and plan its served model's twin the way the runner does
   (runner/standins.plan: model map → hub → vLLM's supported-models table of the target version
   → the model id's family), so each command gets an architecture or a reason;
2. per architecture, one representative command (the one with the fewest options, so its other
   flags are least likely to fail for reasons of their own) runs the config tier with
   `--stand-ins` on the nightly CPU build: the twin is built, vLLM resolves its architecture,
   and that must be the published one;
3. with `--start`, those that pass the config tier also run the probe tier on CPU (slow: a server
   per architecture).

Prints a table per architecture (commands, twin built, config, resolved architecture, start,
why not) and the totals; `--json FILE` keeps them. The per-architecture verdict stands for all
commands of that architecture: an estimate, labelled as such.

    python benchmarks/twins_coverage.py [--corpus DIR] [--target nightly] [--start] [--limit N] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # what this machine has: no hub

from extractor.catalog import extract  # noqa: E402

from runner.builds.resolve import stable_pin
from extractor.records import Catalog  # noqa: E402
from runner.builds import source_trees  # noqa: E402
from runner.models import standins
from runner.settings import cache_dir  # noqa: E402
from runner.builds.targets import DEFAULT_CPU, load  # noqa: E402

CACHE = cache_dir()
ROOT = Path(__file__).resolve().parents[1]


def named_models(snippets) -> list:
    """Commands that name a model id: not a placeholder (`<model>`, `$MODEL`), not a local path."""
    return [s for s in snippets if s.model and s.model not in s.placeholders
            and not s.model.startswith(("<", "$", "/", ".", "~")) and "/" in s.model]


def plan_all(snippets, docs_root: Path, version: str) -> dict[str, tuple[str | None, str]]:
    """{model: (architecture or None, where it came from or why not)} for every served model."""
    out: dict[str, tuple[str | None, str]] = {}
    for s in snippets:
        if s.model is None or s.model in out:
            continue
        try:
            how = standins.plan(s.model, CACHE, docs_root=docs_root, version=version)
        except standins.StandInError as err:
            out[s.model] = (None, str(err))
            continue
        src = "config.json" if how.config_path else how.table or f"the model id's family ({how.family})"
        out[s.model] = (how.architecture or f"({how.family} family)", src)
    return out


def representatives(snippets, planned) -> dict[str, object]:
    """One runnable command per architecture: the one with the fewest arguments."""
    best: dict[str, object] = {}
    for s in snippets:
        arch = planned.get(s.model, (None, ""))[0]
        if arch and s.runnable and s.kind in ("serve", "docker", "recipe", "python"):
            if arch not in best or len(s.argv) < len(best[arch].argv):
                best[arch] = s
    return best


def run_tier(snippets, target: str, tier: str, work: Path) -> dict[str, dict]:
    catalog = Catalog(snippets=list(snippets))
    path = work / f"{tier}.json"
    catalog.write(path)
    out = work / f"{tier}.jsonl"
    cmd = [sys.executable, "-m", "driftmatrix.cli", "run", str(path), "--targets", str(DEFAULT_CPU), "--target",
           target, "--tier", tier, "--stand-ins", "--jobs", "1", "-o", str(out), "--format", "json"]
    subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    results = {}
    for line in out.read_text().splitlines() if out.exists() else []:
        o = json.loads(line)
        results[o["snippet_id"]] = o
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    ap.add_argument("--target", default="nightly")
    ap.add_argument("--start", action="store_true", help="also run the probe tier on CPU for those passing config")
    ap.add_argument("--limit", type=int, default=0, help="only the N architectures with most commands")
    ap.add_argument("--json")
    a = ap.parse_args()
    corpus = Path(a.corpus)
    catalog, _ = extract(stable=stable_pin(), sources=[corpus / "vllm-docs" / "0.33.0", corpus / "recipes" / "8959cf6"])
    target = next(t for t in load(DEFAULT_CPU).targets if t.name == a.target)
    version = target.pip.split("==")[-1] if target.pip else ""
    docs_root = source_trees.source_tree(version, CACHE)
    named = named_models(catalog.snippets)
    planned = plan_all(named, docs_root, version)
    by_arch: Counter = Counter(planned[s.model][0] or "no twin" for s in named)
    why_not = Counter(planned[s.model][1].split(" for ")[0] for s in named if planned[s.model][0] is None)
    print(f"{len(catalog.snippets)} commands, {len(named)} name a model; "
          f"{sum(n for k, n in by_arch.items() if k != 'no twin')} get a twin offline "
          f"({len([k for k in by_arch if k != 'no twin'])} architectures); no twin: {by_arch['no twin']} {dict(why_not)}")
    reps = representatives(named, planned)
    archs = [k for k, _ in by_arch.most_common() if k in reps][: a.limit or None]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        config = run_tier([reps[k] for k in archs], a.target, "config", work)
        passed = [k for k in archs if config.get(reps[k].id, {}).get("verdict") in ("PASS", "WARN")]
        started = run_tier([reps[k] for k in passed], a.target, "probe", work) if a.start else {}
    rows = []
    for arch in archs:
        o = config.get(reps[arch].id, {})
        twin = next((t for t in o.get("evidence", {}).get("twins", []) if t.get("served")), {})
        p = started.get(reps[arch].id, {})
        rows.append({"architecture": arch, "commands": by_arch[arch], "example": reps[arch].model,
                     "built": bool(twin), "config": o.get("verdict"), "resolved": twin.get("resolved_architecture"),
                     "counts": twin.get("counts"), "start": p.get("verdict") if p else None,
                     "why_not": (p or o).get("reason") if (p or o).get("verdict") not in ("PASS", "WARN") else ""})
    print(f"\n{'architecture':44} {'cmds':>5} built config  start  resolved-as-published  why not")
    for r in rows:
        print(f"{r['architecture']:44} {r['commands']:5} {str(r['built']):5} {str(r['config']):6} "
              f"{str(r['start'] or '-'):6} {str(r['counts']):5}  {(r['why_not'] or '')[:110]}")
    ok = sum(r["commands"] for r in rows if r["config"] in ("PASS", "WARN") and r["counts"])
    print(f"\ncommands whose architecture's twin passes config (by architecture, estimated): {ok} of {len(named)}"
          f" naming a model; {time.monotonic() - t0:.0f} s")
    if a.json:
        Path(a.json).write_text(json.dumps({"named": len(named), "by_arch": dict(by_arch), "why_not": dict(why_not),
                                            "rows": rows, "config_ok_commands": ok}, indent=1))


if __name__ == "__main__":
    main()
