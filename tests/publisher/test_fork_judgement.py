"""A page written for a fork or a vendor's own build of vLLM (issue 58, point 4): what its reader runs is
not stock vLLM, so neither a stock build's FAIL nor stock vLLM's option history calls it doc-drift — the
same command on a page for stock vLLM is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load
from driftmatrix.runner.outcomes.evidence_record import RaisedException
from driftmatrix.runner.outcomes.outcome_record import Evidence, Outcome, TargetRef

_CMD = "```bash\nvllm serve org/m --swap-space 4\n```\n"
_FORK = "Install the [vllm-fork](https://github.com/HabanaAI/vllm-fork) first.\n\n"


def _judged(root: Path, tmp: Path, outcomes: list[Outcome]) -> dict[str, object]:
    catalog, _ = extract([root], stable="0.34.0")
    catalog.write(tmp / "snippets.json")
    (tmp / "outcomes.jsonl").write_text("".join(json.dumps(o.to_dict()) + "\n" for o in outcomes))
    results = load(tmp / "snippets.json", [tmp / "outcomes.jsonl"])
    judge = Judge(results)
    return {src.file: judge.of_source(s, src) for s in results.snippets for src in s.sources}


def test_a_stock_builds_failure_is_no_alarm_on_a_forks_page(tmp_path):
    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "stock.md").write_text(f"# Stock\n\n{_CMD}")
    (docs / "fork.md").write_text(f"# Fork\n\n{_FORK}{_CMD}")
    catalog, _ = extract([docs], stable="0.34.0")
    [snippet] = catalog.snippets  # one command, two pages
    failed = Outcome(
        snippet.id,
        TargetRef("stable", "0.34.0", "abc", "vllm"),
        "parse",
        "parse",
        "FAIL",
        reason="ArgumentError: unrecognized arguments: --swap-space",
        evidence=Evidence(
            exception=RaisedException.from_json(
                {"type": "SystemExit", "message": "unrecognized arguments: --swap-space", "location": None}
            )
        ),
        started="2026-12-07T10:00:00+00:00",
    )
    got = _judged(docs, tmp_path, [failed])
    assert got["stock.md"].kind == "doc-drift", got["stock.md"].summary
    fork = got["fork.md"]
    assert (fork.kind, fork.written_for.basis) == ("unknown", "fork"), fork.summary
    assert "non-stock build" in fork.summary and "HabanaAI/vllm-fork" in fork.summary
    assert "stock vLLM 0.34.0 ran, but cannot speak for it" in fork.summary


def test_stock_vllms_history_says_nothing_of_a_forks_page(corpus, tmp_path):
    """`--swap-space` (removed from stock vLLM in 0.18.0) on the Gaudi plugin's site, no build checked:
    doc-drift by the history on a page for stock vLLM; unknown on the page that installs the Habana fork."""
    site = tmp_path / "gaudi"
    (site / "docs").mkdir(parents=True)
    gaudi = next((corpus / "thirdparty").glob("vllm-gaudi-*"))
    for name in ("mkdocs.yaml", "README.md", "LICENSE"):
        shutil.copy(gaudi / name, site / name)
    (site / "docs" / "stock.md").write_text(f"# Stock\n\n{_CMD}")
    (site / "docs" / "fork.md").write_text(f"# Fork\n\n{_FORK}{_CMD}")
    got = _judged(site, tmp_path, [])
    assert got["docs/stock.md"].kind == "doc-drift" and got["docs/stock.md"].decided_by == "history"
    assert (got["docs/fork.md"].kind, got["docs/fork.md"].decided_by) == ("unknown", "builds")
