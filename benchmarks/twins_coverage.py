"""Twin coverage on the vLLM 0.33.0 docs + recipes (issues 22, 35): how many documented commands that
name a model reach a start-tier verdict on vLLM's CPU build (one rank or many) and on the H200 (one
GPU), and why the rest do not.

Steps, all offline (no hub; HF_HUB_OFFLINE=1):
1. extract the 0.33.0 docs tree and the recipes snapshot; take every command that names a model
   (not a placeholder) and plan its served model's twin the way the runner does
   (runner/models/twins.plan: model map -> hub -> vLLM's supported-models table of the target
   version -> the model id's family), so each command gets an architecture or a reason; and its ranks
   (runner/serve/ranks.py: one, several on CPU, or why not here);
2. per architecture, representatives (the plainest runnable command: fewest ranks, no environment
   variable, no second model or KV-transfer peer, fewest arguments): one with one rank, one with
   several ranks on CPU (not expert parallel) and one expert parallel, each through the probe tier
   with `--stand-ins` on the CPU target (one-rank ones two side by side, multi-rank ones alone);
   where a kind's first did not reach a verdict, its next plainest is run too (`TRIES`);
3. a command counts as reaching a start-tier verdict when its architecture's representative of its
   kind did (PASS/WARN/FAIL at start or later, or a probe SKIP after the server answered /health):
   an estimate per architecture, labelled as such. Expert-parallel commands count by the expert
   parallel representative where one ran. The H200 column is the recorded run 3 (CUDA 0.26.0,
   tests/fixtures/gpu/twins-h200-0.26.0*.jsonl, judged again by today's rules), one GPU, so
   multi-rank commands do not reach it there.

    python benchmarks/twins_coverage.py [--corpus DIR] [--target nightly] [--limit N] [--json F] [--work DIR]
                                        [--ranks-tries N]
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

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.argv.parallel import ranks_of
from driftmatrix.runner.builds import source_trees
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import DEFAULT_CPU, load
from driftmatrix.runner.diagnosis import classify
from driftmatrix.runner.jobs.tiers.state import judge_failure
from driftmatrix.runner.models import twins
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.outcomes.vocabulary import REAL
from driftmatrix.runner.serve import ranks
from driftmatrix.runner.settings import cache_dir

CACHE = cache_dir()
ROOT = Path(__file__).resolve().parents[1]


def named_models(snippets) -> list:
    """Commands that name a model id: not a placeholder (`<model>`, `$MODEL`), not a local path."""
    return [
        s
        for s in snippets
        if s.model
        and s.model not in s.placeholders
        and not s.model.startswith(("<", "$", "/", ".", "~"))
        and "/" in s.model
    ]


def plan_all(snippets, docs_root: Path, version: str) -> dict[str, tuple[str | None, str]]:
    """{model: (architecture or None, where it came from or why not)} for every served model."""
    out: dict[str, tuple[str | None, str]] = {}
    for s in snippets:
        if s.model is None or s.model in out:
            continue
        try:
            how = twins.plan(s.model, CACHE, docs_root=docs_root, version=version)
        except twins.TwinError as err:
            out[s.model] = (None, str(err))
            continue
        src = "config.json" if how.config_path else how.table or f"the model id's family ({how.family})"
        out[s.model] = (how.architecture or f"({how.family} family)", src)
    return out


H200 = [ROOT / "tests/fixtures/gpu/twins-h200-0.26.0.jsonl", ROOT / "tests/fixtures/gpu/twins-h200-0.26.0-extra.jsonl"]


def kind(snippet) -> str:
    """`one`, `ranks`, `ep` (expert parallel on CPU ranks) or why the command's ranks cannot run here."""
    r = ranks_of(snippet.argv)
    why = ranks.refusal(r, 0, cpu_build=True)
    return why.split(";")[-1].strip() if why else "one" if r.world == 1 else "ep" if r.ep > 1 else "ranks"


SECOND_MODEL = ("--tokenizer", "--speculative-config", "--speculative_config", "--kv-transfer-config")


def plainness(s) -> tuple:
    """Lower is plainer: fewer ranks, no environment variable (`VLLM_USE_FASTOKENS=1` needs a package of
    its own), no second model or service (`--tokenizer ORG/NAME`, a draft model, a KV-transfer peer),
    fewer arguments."""
    second = any(t.split("=")[0].split(".")[0] in SECOND_MODEL for t in s.argv)
    return ranks_of(s.argv).world, bool(s.env), second, len(s.argv), s.id


def representatives(snippets, planned) -> dict[tuple[str, str], list]:
    """{(architecture, kind): its runnable commands of that kind, plainest first (`plainness`)}: the
    first represents the kind; the next is run where the first did not reach a verdict."""
    found: dict[tuple[str, str], list] = {}
    for s in snippets:
        arch, k = planned.get(s.model, (None, ""))[0], kind(s)
        if arch and k in ("one", "ranks", "ep") and s.runnable and s.kind in ("serve", "docker", "recipe", "python"):
            found.setdefault((arch, k), []).append(s)
    return {key: sorted(cands, key=plainness) for key, cands in found.items()}


def run_tier(snippets, target: str, tier: str, work: Path, jobs: int, name: str) -> dict[str, dict]:
    catalog = Catalog(snippets=list(snippets))
    path = work / f"{name}.json"
    catalog.write(path)
    out = work / f"{name}.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "driftmatrix.cli",
        "run",
        str(path),
        "--targets",
        str(DEFAULT_CPU),
        "--target",
        target,
        "--tier",
        tier,
        "--stand-ins",
        "--jobs",
        str(jobs),
        "-o",
        str(out),
        "--format",
        "json",
    ]
    if snippets:
        subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    return {o["snippet_id"]: o for o in map(json.loads, out.read_text().splitlines())} if out.exists() else {}


def rejudged(o: dict, device: str = "cpu") -> dict:
    """A FAIL judged again by today's rules (a run's own rules may be older than this checkout's)."""
    if o["verdict"] != "FAIL":
        return o
    out = Outcome.from_dict(o)
    v, sig = judge_failure(
        list(out.evidence.twins),
        out.stage,
        out.evidence.exception,
        out.target.version,
        device,
        out.evidence.log_excerpt,
    )
    signature = {"id": sig.id, "explanation": sig.explanation} if sig else None
    return {
        **o,
        "verdict": v.verdict,
        "reason": v.reason or o.get("reason"),
        "evidence": {**(o.get("evidence") or {}), "signature": signature},
    }


def reached(o: dict | None) -> bool:
    """The start tier decided: a verdict at start or later, or the server answered and a later tier SKIPped."""
    if not o:
        return False
    started = ((o.get("evidence") or {}).get("server") or {}).get("state") == "ready"
    return (o["verdict"] in REAL and o.get("stage") in ("start", "probe", "perf")) or (
        o["verdict"] == "SKIP" and o.get("stage") == "probe" and started
    )


CPU_ONLY = {sig.id for sig in classify.load()[0] if sig.only_on == "cpu"}
WHY = {
    "beyond": "multi-node, or more ranks than run here",
    "hub": "no twin offline: its configuration is only on the hub (neither transformers nor vLLM has the class)",
    "second": "a second model (draft, tokenizer) with no twin offline",
    "omni": "a vLLM-Omni command, not vLLM's",
    "defaults": "the twin from configuration-class defaults lacks what vLLM or its model class reads (a twin artefact)",
    "cpu": "vLLM's CPU build cannot run it (vLLM's own refusal or crash on CPU; a GPU runs other code)",
    "memory": "this machine's memory (the sandbox's limit)",
    "package": "an optional package this build's environment lacks",
    "other": "other",
}
"""Why a command does not reach a start-tier verdict here, by what its representative reached.
`beyond`, `hub` and `omni` cannot be reached by any twin on this machine (the offline ceiling); `cpu`
only on a GPU."""
OUT_OF_REACH = ("beyond", "hub", "omni")


def why_not(o: dict | None, k: str, model: str) -> str:
    """The `WHY` key of a command of kind `k` serving `model` whose representative's outcome is `o`."""
    if k not in ("one", "ranks", "ep"):
        return "beyond"
    if o is None:
        return "other"
    reason, sig = o.get("reason") or "", ((o.get("evidence") or {}).get("signature") or {}).get("id")
    if sig == "vllm-omni-command":
        return "omni"
    if sig in CPU_ONLY:
        return "cpu"
    if "twin artefact" in reason:
        return "defaults"
    if "not available here" in reason:
        if not reason.startswith(f"model {model} "):
            return "second"
        # our builder failed on a class it has (a twin artefact), or there is no class to build from
        return "hub" if "no configuration class" in reason or "no configuration for" in reason else "defaults"
    if o["verdict"] == "ERROR" and "memory" in reason:
        return "memory"
    if "imports a package" in reason:
        return "package"
    return "other"


TRIES = 2
"""Representatives run per architecture and kind: the next one where the first did not reach a verdict
(its own second model, optional package or feature stopped it, not the twin)."""


def run_representatives(
    reps: dict, archs: list[str], target: str, work: Path, ranks_tries: int = TRIES
) -> dict[str, dict]:
    """{snippet id: outcome judged by today's rules} of each kind's first representative and, where it
    did not reach a verdict, the next (`TRIES`; `ranks_tries` for the multi-rank kinds, whose starts take
    the whole machine): one-rank ones two side by side first, then the multi-rank ones alone."""
    results: dict[str, dict] = {}

    def pick(kinds, attempt):
        picked = []
        for x in archs:
            for k in kinds:
                cands = reps.get((x, k), [])
                if len(cands) > attempt and not any(reached(results.get(s.id)) for s in cands[:attempt]):
                    picked.append(cands[attempt])
        return picked

    for kinds, tries, jobs, name in ((("one",), TRIES, 2, "one"), (("ranks", "ep"), ranks_tries, 1, "ranks")):
        for attempt in range(tries):
            got = run_tier(
                pick(kinds, attempt), target, "probe", work, jobs, name + (f"-{attempt + 1}" if attempt else "")
            )
            results.update({sid: rejudged(o) for sid, o in got.items()})
    return results


def h200_by_architecture() -> dict[str, tuple[str, str]]:
    """{published architecture: (verdict by today's rules, stage)} of the recorded H200 run."""
    found: dict[str, tuple[str, str]] = {}
    for path in H200:
        for line in path.read_text().splitlines():
            o = Outcome.from_dict(json.loads(line))
            arch = next((t.published_architecture for t in o.evidence.twins if t.served), None)
            verdict = (
                o.verdict
                if o.verdict != "FAIL"
                else judge_failure(list(o.evidence.twins), o.stage, o.evidence.exception, o.target.version, "gpu")[
                    0
                ].verdict
            )
            if arch and (arch not in found or (verdict in REAL and found[arch][0] not in REAL)):
                found[arch] = (verdict, o.stage)
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    ap.add_argument("--target", default="nightly")
    ap.add_argument("--limit", type=int, default=0, help="only the N architectures with most commands")
    ap.add_argument("--json")
    ap.add_argument("--work", help="keep the runs' outcomes here; a rerun keeps the jobs they finished")
    ap.add_argument(
        "--ranks-tries", type=int, default=TRIES, help="multi-rank representatives per kind (default: %(default)s)"
    )
    a = ap.parse_args()
    corpus = Path(a.corpus)
    catalog, _ = extract(stable=stable_pin(), sources=[corpus / "vllm-docs" / "0.33.0", corpus / "recipes" / "8959cf6"])
    target = next(t for t in load(DEFAULT_CPU).targets if t.name == a.target)
    version = target.pip.split("==")[-1] if target.pip else ""
    docs_root = source_trees.source_tree(version, CACHE)
    named = named_models(catalog.snippets)
    planned = plan_all(named, docs_root, version)
    by_arch: Counter = Counter(planned[s.model][0] or "no twin" for s in named)
    known = [s for s in named if planned[s.model][0]]
    kinds = Counter(kind(s) for s in known)
    print(
        f"{len(catalog.snippets)} commands, {len(named)} name a model; {len(known)} of an architecture known "
        f"offline ({len(by_arch) - ('no twin' in by_arch)} architectures); their ranks on CPU: {dict(kinds)}"
    )
    reps = representatives(known, planned)
    archs = [k for k, _ in by_arch.most_common() if k != "no twin"][: a.limit or None]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        results = run_representatives(reps, archs, a.target, work, a.ranks_tries)
    h200 = h200_by_architecture()
    rows, counted = [], Counter()
    for arch in archs:
        row = {"architecture": arch, "commands": by_arch[arch], "h200": h200.get(arch, ("not in the sample", ""))[0]}
        for k in ("one", "ranks", "ep"):
            tried = [(s, results[s.id]) for s in reps.get((arch, k), [])[:TRIES] if s.id in results]
            s, o = next(((s, o) for s, o in tried if reached(o)), tried[0] if tried else (None, None))
            row[k] = (
                (o["verdict"] + "@" + str(o.get("stage")), reached(o), o.get("reason") or "", why_not(o, k, s.model))
                if o
                else None
            )
        fallback = row["one"] or row["ranks"]
        for s in (s for s in known if planned[s.model][0] == arch):
            k = kind(s)
            got = row.get(k) if k in ("one", "ranks", "ep") else None
            got = got or (fallback if k in ("one", "ranks") else None)
            counted[("cpu", bool(got and got[1]))] += 1
            counted[("cpu-before", k == "one" and bool(got and got[1]))] += 1
            counted[("h200", k == "one" and row["h200"] in REAL)] += 1
            counted[("why", "reached" if got and got[1] else got[3] if got else why_not(None, k, s.model))] += 1
        rows.append(row)
    print(f"\n{'architecture':44} {'cmds':>5} {'one rank':14} {'CPU ranks':14} {'EP ranks':14} {'H200':6} why not")
    for r in rows:
        cells = [f"{(r[k][0] if r[k] else '-'):14}" for k in ("one", "ranks", "ep")]
        why = next((r[k][2] for k in ("one", "ranks", "ep") if r[k] and not r[k][1]), "")
        print(f"{r['architecture'][:44]:44} {r['commands']:5} {' '.join(cells)} {r['h200'][:6]:6} {why[:90]}")
    total = len(known)
    print(
        f"\ncommands reaching a start-tier verdict (by architecture, estimated), of {total} whose architecture is "
        f"known offline ({len(named)} name a model):\n"
        f"  CPU after (ranks on CPU): {counted[('cpu', True)]} ({100 * counted[('cpu', True)] / total:.1f} %)\n"
        f"  CPU before (multi-GPU commands SKIP): {counted[('cpu-before', True)]} "
        f"({100 * counted[('cpu-before', True)] / total:.1f} %)\n"
        f"  H200 one GPU (recorded run 3, CUDA 0.26.0): {counted[('h200', True)]} "
        f"({100 * counted[('h200', True)] / total:.1f} %)\n"
        f"  why the rest do not (CPU):"
    )
    for key, what in WHY.items():
        print(f"    {counted[('why', key)]:4}  {what}")
    ceiling = total - sum(counted[("why", key)] for key in OUT_OF_REACH)
    print(
        f"  the most any twin could reach offline on one host: {ceiling} ({100 * ceiling / total:.1f} %); "
        f"on CPU: {ceiling - counted[('why', 'cpu')]} ({100 * (ceiling - counted[('why', 'cpu')]) / total:.1f} %)"
        f"\n  {time.monotonic() - t0:.0f} s"
    )
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "named": len(named),
                    "known": total,
                    "by_arch": dict(by_arch),
                    "ranks": dict(kinds),
                    "rows": rows,
                    "counted": {f"{k[0]}:{k[1]}": n for k, n in counted.items()},
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
