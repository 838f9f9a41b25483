"""A model the hub says no reader can load (runner/models/hub_answer.py), as the judgement says it: the
recorded 0.20.1 and 0.32.0 runs of the site fixture (real records), with a later run of one command
where the runner's own verdict (runner/jobs/tiers/state.unloadable) recorded the hub's 404. Doc-drift
whose summary says "the model cannot be loaded as written", never a vLLM regression (the hub's answer
is the same for every build)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load
from driftmatrix.runner.jobs.tiers.state import apply, unloadable
from driftmatrix.runner.models import hub_answer
from driftmatrix.runner.outcomes.outcome_record import Outcome

HUB = "the hub at http://127.0.0.1:8123"


def _records(path) -> list[Outcome]:
    return [Outcome.from_dict(json.loads(ln)) for ln in path.read_text().splitlines() if ln.strip()]


def _passed_config_everywhere(site_inputs) -> list[Outcome]:
    """The real config-tier PASSes of one served-model command, one per build."""
    by_snippet: dict[str, list[Outcome]] = {}
    for o in _records(site_inputs["config"]):
        if (o.verdict, o.stage, o.variant) == ("PASS", "config", None):
            by_snippet.setdefault(o.snippet_id, []).append(o)
    return next(v for v in by_snippet.values() if len({o.target.version for o in v}) == 2)


def _as_unloadable(o: Outcome, model: str) -> Outcome:
    """The same job run later, the hub answering 404 for its model: the runner's own verdict."""
    again = Outcome.from_dict(o.to_dict())
    again.started, again.evidence.effective_config, again.evidence.warnings = "2099-01-01T00:00:00", {}, []
    found = hub_answer.answer(model, 404, hub_answer.unloadable(404, None), [], HUB)
    apply(again, unloadable(SimpleNamespace(outcome=again, unloadable=[found])))
    return again


def _judged(stable_plus, tmp_path, records: list[Outcome], snippet_id: str):
    path = tmp_path / "outcomes.jsonl"
    path.write_text("".join(json.dumps(o.to_dict()) + "\n" for o in records))
    results = load(stable_plus, [path])
    return Judge(results).of(next(s for s in results.snippets if s.id == snippet_id))


def test_the_summary_says_the_model_cannot_be_loaded_as_written(site_inputs, stable_plus, tmp_path):
    passed = _passed_config_everywhere(site_inputs)
    sid = passed[0].snippet_id
    model = next(s for s in load(stable_plus, []).snippets if s.id == sid).model
    assert _judged(stable_plus, tmp_path, passed, sid).kind == "ok"  # as recorded
    j = _judged(stable_plus, tmp_path, passed + [_as_unloadable(o, model) for o in passed], sid)
    assert j.kind == "doc-drift" and j.depth == "config"
    assert j.summary.startswith(
        f"The model cannot be loaded as written ({model}: no such repository on the hub "
        f"(404 for its file listing), asked of {HUB}). Fails at config on vLLM "
    ), j.summary


def test_it_is_never_a_vllm_regression(site_inputs, stable_plus, tmp_path):
    """0.20.1 passed at config (an earlier run: the repository was there then); 0.32.0 fails because the
    hub now says it is not: the docs must change, whichever build came first."""
    passed = sorted(_passed_config_everywhere(site_inputs), key=lambda o: o.target.version)
    sid = passed[0].snippet_id
    model = next(s for s in load(stable_plus, []).snippets if s.id == sid).model
    j = _judged(stable_plus, tmp_path, [passed[0], _as_unloadable(passed[1], model)], sid)
    assert j.kind == "doc-drift" and j.regression is None, j.summary
    assert j.summary.startswith("The model cannot be loaded as written"), j.summary


def test_a_parse_job_failing_at_config_says_where_it_stopped(site_inputs):
    """The hub is asked at every tier: a parse job's FAIL at config went further than it was to go, so
    the page does not say it "was to go on up to" the parser."""
    from driftmatrix.publisher.snippet_page import checked

    parsed = next(o for o in _records(site_inputs["parse"]) if o.verdict == "PASS" and o.tier == "parse")
    failed = _as_unloadable(parsed, "org/absent")
    assert (failed.verdict, failed.stage, failed.tier) == ("FAIL", "config", "parse")
    assert checked(failed).endswith(", where it stopped") and "go on up to" not in checked(failed)
