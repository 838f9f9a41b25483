"""Concrete facts about the real vLLM docs and recipes (../shared/corpus)."""

import re
from pathlib import Path

import pytest

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def fenced_blocks(text: str):
    """A deliberately naive fence scanner, independent of the extractor: (start line, lines)."""
    block, marker, start = None, None, 0
    for i, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if block is None and m:
            block, marker, start = [], m.group(1)[0], i
        elif (
            block is not None and m and m.group(1)[0] == marker and line.strip() == line.strip()[0] * len(line.strip())
        ):
            yield start, block
            block = None
        elif block is not None:
            block.append(line)


@pytest.mark.parametrize("version", ["0.20.1", "0.33.0"])
def test_every_file_with_a_fenced_serve_and_spec_config_yields_a_parsed_config(corpus, snippets_from, version):
    root = corpus / "vllm-docs" / version
    expected = set()
    for path in root.rglob("*.md"):
        for _, block in fenced_blocks(path.read_text(errors="replace")):
            body = "\n".join(block)
            if "vllm serve" in body and re.search(r"--speculative[-_]config", body):
                expected.add(path.relative_to(root).as_posix())
    assert len(expected) >= {"0.20.1": 5, "0.33.0": 10}[version]
    for file in sorted(expected):
        found = [s for s in snippets_from("vllm-docs", version, file) if isinstance(s.speculative_config, dict)]
        assert found, f"{version} {file}: no snippet with a parsed speculative_config"


def test_gemma4_recipe_page(snippets_from):
    found = snippets_from("recipes", "8959cf6", "Google/Gemma4.md")
    match = [
        s
        for s in found
        if s.model == "google/gemma-4-31B-it"
        and s.speculative_config == {"model": "google/gemma-4-31B-it-assistant", "num_speculative_tokens": 4}
    ]
    assert len(match) == 1
    snippet = match[0]
    assert snippet.kind == "serve" and snippet.runnable
    source = next(s for s in snippet.sources if s.file == "Google/Gemma4.md")
    assert source.line == 1036 and source.anchor == "online-serving"
    assert "--tensor-parallel-size" in snippet.argv


def test_gemma4_e2b_recipe_yaml_spec_decoding_feature(snippets_from, corpus):
    found = snippets_from("recipes", "8959cf6", "models/Google/gemma-4-E2B-it.yaml")
    spec = [s for s in found if s.kind == "recipe" and s.speculative_config]
    assert len(spec) == 1
    assert spec[0].model == "google/gemma-4-E2B-it"
    assert spec[0].speculative_config == {"model": "google/gemma-4-E2B-it-assistant", "num_speculative_tokens": 2}
    source = next(s for s in spec[0].sources if s.corpus == "recipes")
    text = (corpus / "recipes" / "8959cf6" / source.file).read_text().split("\n")
    assert "--speculative-config" in text[source.line - 1]
    assert source.context == "recipe:features.spec_decoding.args"
    assert source.url == "https://recipes.vllm.ai/Google/gemma-4-E2B-it"
    # the guide: Markdown inside the YAML is read too, with file lines
    guide = [s for s in found if s.kind == "docker" and s.image == "vllm/vllm-openai:gemma4-0505-cu129"]
    assert guide and guide[0].model == "google/gemma-4-E2B-it"
    line = next(src.line for src in guide[0].sources if src.file == source.file)
    assert text[line - 1].strip().startswith("docker run")


def test_ansi_c_quoted_ngram_config_in_benchmarking_cli(snippets_from):
    found = [
        s
        for s in snippets_from("vllm-docs", "0.33.0", "docs/benchmarking/cli.md")
        if s.speculative_config and s.speculative_config.get("method") == "ngram"
    ]
    assert found
    assert found[0].speculative_config == {
        "method": "ngram",
        "num_speculative_tokens": 5,
        "prompt_lookup_max": 5,
        "prompt_lookup_min": 2,
    }


def test_backslash_followed_by_spaces_in_expert_parallel_deployment(snippets_from, corpus):
    file = "docs/serving/expert_parallel_deployment.md"
    lints = [
        lint
        for s in snippets_from("vllm-docs", "0.33.0", file)
        for lint in s.lints
        if lint.code == "backslash-not-continuation" and lint.file == file and lint.version == "0.33.0"
    ]
    lines = (corpus / "vllm-docs" / "0.33.0" / file).read_text().split("\n")
    flagged = {lint.line for lint in lints}
    truth = {i for i, line in enumerate(lines, 1) if re.search(r"\\[ \t]+(#.*)?$", line)}
    assert flagged == truth and len(truth) >= 10


def test_ids_are_stable_across_docs_versions(real_catalog):
    both = [s for s in real_catalog.snippets if {"0.20.1", "0.33.0"} <= {src.version for src in s.sources}]
    assert len(both) > 50
    ngram = [s for s in both if s.speculative_config and s.speculative_config.get("method") == "ngram"]
    assert ngram
    # the same written command always lands in the same snippet, whatever page/version
    by_text: dict[tuple, set] = {}
    for snippet in real_catalog.snippets:
        for src in snippet.sources:
            by_text.setdefault((snippet.kind, src.text, src.context.split(" ")[0]), set()).add(snippet.id)
    assert all(len(ids) == 1 for ids in by_text.values())


def test_reported_lines_point_at_the_command(real_catalog, corpus):
    roots = {
        ("vllm-docs", "0.20.1"): corpus / "vllm-docs" / "0.20.1",
        ("vllm-docs", "0.33.0"): corpus / "vllm-docs" / "0.33.0",
        ("recipes", "8959cf6"): corpus / "recipes" / "8959cf6",
    }
    cache: dict[Path, list[str]] = {}
    checked = 0
    for snippet in real_catalog.snippets:
        for src in snippet.sources:
            if not src.context.startswith("fence:") or src.context.startswith("fence:yaml"):
                continue
            path = roots[(src.corpus, src.version)] / src.file
            lines = cache.setdefault(path, path.read_text().split("\n"))
            first = src.text.split("\n")[0].strip()
            assert first and first in lines[src.line - 1], (src.file, src.line, first)
            checked += 1
    assert checked > 1000


def test_docker_kubernetes_and_python_shapes(snippets_from):
    docker = [s for s in snippets_from("vllm-docs", "0.33.0", "docs/deployment/docker.md") if s.kind == "docker"]
    assert any(s.image == "vllm/vllm-openai:latest" and s.model == "meta-llama/Llama-3.1-8B-Instruct" for s in docker)
    k8s = snippets_from("vllm-docs", "0.33.0", "docs/deployment/k8s.md")
    assert any(
        s.model == "mistralai/Mistral-7B-Instruct-v0.3"
        and "--enable-chunked-prefill" in s.argv
        and s.sources[0].context == "yaml:container"
        for s in k8s
    )
    # a manifest in a here-document piped to kubectl
    assert any(s.model == "meta-llama/Llama-3.2-1B-Instruct" for s in k8s)
    gemma_python = [s for s in snippets_from("recipes", "8959cf6", "Google/Gemma4.md") if s.kind == "python"]
    assert gemma_python[0].model == "google/gemma-4-E4B-it"  # resolved from `model_path = ...`
    assert gemma_python[0].python["call"] == "LLM"
    assert gemma_python[0].speculative_config["num_speculative_tokens"] == 4


def test_placeholders_make_snippets_not_runnable(real_catalog):
    for snippet in real_catalog.snippets:
        if snippet.placeholders:
            assert not snippet.runnable and snippet.reason
    placeholder = [s for s in real_catalog.snippets if "<target-model>" in s.placeholders]
    assert placeholder and placeholder[0].reason.startswith("placeholder")
