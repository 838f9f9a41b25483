"""CPU and GPU verdicts of the same vLLM version (issue 35): the commands the H200 twin sample decided
on CUDA vLLM 0.26.0 (benchmarks/gpu/README.md, run 3; records in tests/fixtures/gpu/), run again on
vLLM's CPU build of 0.26.0 (benchmarks/gpu/targets-cpu-0.26.0.toml: the transformers the CUDA payload
resolved to, so both builds get the same twins) at the probe tier with twins, and compared.

The H200 verdicts are judged again by today's rules (runner/jobs/tiers/state.judge_failure: a FAIL
that is the twin's or the machine's is no longer a FAIL), as the CPU ones are when they are made.
Agreement counts the commands both builds decided (PASS/WARN count as one: they differ by a logged
warning; FAIL must match FAIL); the rest are listed with each side's verdict and reason.

    python benchmarks/cpu_gpu_agreement.py [--jobs 2] [--all] [--out cpu-026.jsonl]

`--all`: every command of the sample, not only those the H200 decided (slower).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.jobs.tiers.state import judge_failure
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.outcomes.vocabulary import GOOD, REAL

ROOT = Path(__file__).resolve().parents[1]
RECORDS = [
    ROOT / "tests/fixtures/gpu/twins-h200-0.26.0.jsonl",
    ROOT / "tests/fixtures/gpu/twins-h200-0.26.0-extra.jsonl",
]
SAMPLES = [ROOT / "benchmarks/gpu/twins-sample-0.26.0.json", ROOT / "benchmarks/gpu/twins-sample-0.26.0-extra.json"]
TARGETS = ROOT / "benchmarks/gpu/targets-cpu-0.26.0.toml"


def today(o: Outcome, device: str) -> str:
    """The verdict by today's rules: a FAIL may now be the twin's, the machine's or this device's."""
    if o.verdict != "FAIL":
        return o.verdict
    return judge_failure(list(o.evidence.twins), o.stage, o.evidence.exception, o.target.version, device)[0].verdict


def same(a: str, b: str) -> bool:
    return a == b or {a, b} <= set(GOOD)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "cpu-026.jsonl"), help="the CPU outcomes (kept: a rerun resumes)")
    a = ap.parse_args()
    gpu = {}
    for path in RECORDS:
        for line in path.read_text().splitlines():
            o = Outcome.from_dict(json.loads(line))
            gpu[o.snippet_id] = (o, today(o, "gpu"))
    snippets = [s for path in SAMPLES for s in Catalog.read(path).snippets]
    wanted = [s for s in snippets if s.id in gpu and (a.all or gpu[s.id][1] in REAL)]
    with tempfile.TemporaryDirectory(prefix="dm-agree-") as tmp:
        path = Path(tmp) / "snippets.json"
        Catalog(snippets=wanted).write(path)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "driftmatrix.cli",
                "run",
                str(path),
                "--targets",
                str(TARGETS),
                "--tier",
                "probe",
                "--stand-ins",
                "--jobs",
                a.jobs,
                "-o",
                a.out,
                "--format",
                "json",
            ],
            check=False,
            capture_output=True,
            text=True,
            cwd=tmp,
        )
    cpu = {}
    for line in Path(a.out).read_text().splitlines() if Path(a.out).exists() else []:
        o = Outcome.from_dict(json.loads(line))
        cpu[o.snippet_id] = (o, today(o, "cpu"))
    both = [s for s in wanted if s.id in cpu and gpu[s.id][1] in REAL and cpu[s.id][1] in REAL]
    agree = [s for s in both if same(gpu[s.id][1], cpu[s.id][1])]
    print(f"{'snippet':16} {'H200 0.26.0':12} {'CPU 0.26.0':12}  model / why")
    for s in wanted:
        g, c = gpu[s.id], cpu.get(s.id, (None, "-"))
        mark = "" if s in agree else "  <-" if s in both else ""
        why = next((o.reason for o, v in (c, g) if o is not None and v not in GOOD and o.reason), "")
        print(
            f"{s.id:16} {g[1] + '@' + str(g[0].stage):12} {c[1] + '@' + str(c[0].stage if c[0] else '-'):12}  "
            f"{s.model}{mark}  {(why or '')[:150]}"
        )
    share = f"{100 * len(agree) / len(both):.0f} %" if both else "n/a"
    print(
        f"\ndecided on both: {len(both)}; same verdict: {len(agree)} ({share}); decided on the H200 only: "
        f"{sum(1 for s in wanted if gpu[s.id][1] in REAL and cpu.get(s.id, (0, '-'))[1] not in REAL)}"
    )


if __name__ == "__main__":
    main()
