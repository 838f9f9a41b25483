"""Each entry point by its own rules (issue 58 point 5): `python -m vllm.entrypoints.openai.api_server`
is parsed by the parser that module builds, not as `vllm serve` — whose positional model rule ("`model`
should be provided as the first positional argument when using `vllm serve`") vLLM applies only when
the arguments start with `serve` — and its server is started as that module, on the real CPU builds."""

from __future__ import annotations

from runhelp import catalog_of, docs_tree, outcomes, pick, run_cli

PAGE = """# Legacy

## Served name only

```bash
python -m vllm.entrypoints.openai.api_server --served-model-name my-model --max-model-len 256
```

## The same with vllm serve

```bash
vllm serve --served-model-name my-model --max-model-len 256
```

## A model of ours

```bash
python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-0.6B --max-model-len 256 --no-such-option 1
```

## A model of ours, started

```bash
python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-0.6B --max-model-len 256 --max-num-seqs 4 --enforce-eager
```
"""


def test_the_legacy_entry_point_is_parsed_and_started_as_its_module(tmp_path, targets_toml):
    snippets, ids = catalog_of(docs_tree(tmp_path / "site", PAGE))
    legacy, serve = ids["served-name-only"][0], ids["the-same-with-vllm-serve"][0]
    wrong, started = ids["a-model-of-ours"][0], ids["a-model-of-ours-started"][0]
    out = tmp_path / "outcomes.jsonl"
    common = ("--targets", str(targets_toml), "-o", str(out))
    run_cli(str(snippets), *common, "--tier", "parse", "--only", legacy, serve, wrong, cwd=tmp_path)
    run_cli(str(snippets), *common, "--tier", "start", "--target", "nightly", "--only", started, cwd=tmp_path)
    found = outcomes(out)
    for target in ("stable", "nightly"):
        assert pick(found, legacy, target).verdict == "PASS", pick(found, legacy, target)
        refused = pick(found, serve, target)  # vLLM's own `vllm serve` rule still applies to `vllm serve`
        assert refused.verdict == "FAIL" and "first positional argument" in str(refused.evidence.exception)
        bad = pick(found, wrong, target)  # its parser is vLLM's: an unknown option is still refused
        assert bad.verdict == "FAIL" and "--no-such-option" in str(bad.evidence.exception), bad
    ran = pick(found, started, "nightly")
    assert (ran.verdict, ran.stage) == ("PASS", "start"), (ran.verdict, ran.stage, ran.reason)
    assert any("python -m vllm.entrypoints.openai.api_server" in n for n in ran.evidence.notes), ran.evidence.notes
