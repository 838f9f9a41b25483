"""Issue 32, point 10: the extraction classes missed on the newest docs (the 0.34.0 sdist's docs and
recipes tree, the corpora), each on the real page where it was found."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.python_calls import from_python
from driftmatrix.extractor.snippet_builder import Place, from_shell_text
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU


def at(catalog: Catalog, file: str, line: int, version: str | None = None):
    return [
        s
        for s in catalog.snippets
        for src in s.sources
        if src.file == file and src.line == line and version in (None, src.version)
    ]


def file_lines(root: Path, file: str) -> list[str]:
    return (root / file).read_text().split("\n")


def test_a_command_written_as_a_comment_is_a_documented_command(real_catalog, corpus):
    # `# vllm serve intfloat/e5-small` in a Python example: the command the reader starts the server
    # with. Before: not extracted (Python skips comments). Extracted, runnable, marked as a comment.
    [e5] = at(real_catalog, "docs/models/pooling_models/README.md", 210, "0.33.0")
    assert e5.argv == ["intfloat/e5-small"] and e5.runnable and e5.lints == []
    assert {src.context for src in e5.sources} == {"fence:python in a comment"}
    # A commented command continued over comment lines (`#   … \`), with the page's own slip
    # (`vllm serve serve …`) kept as written, for the runner to judge.
    file = "DeepSeek/DeepSeek-V3_2.md"
    [v32] = at(real_catalog, file, 261, "8959cf6")
    assert file_lines(corpus / "recipes" / "8959cf6", file)[260].startswith("#   vllm serve serve")
    assert v32.argv[:2] == ["serve", "deepseek-ai/DeepSeek-V3.2"] and v32.argv[-2:] == [
        "--reasoning-parser",
        "deepseek_v3",
    ]


def test_docker_with_an_empty_entrypoint_and_an_image_variable(real_catalog, corpus):
    # `docker run … --entrypoint="" … "$IMAGE" vllm serve nvidia/Qwen3.6-27B-NVFP4 …` (head and worker
    # node). Before: not extracted (the empty entrypoint was taken for a program to look inside).
    file = "recipes/models/Qwen/Qwen3.6-27B.yaml"
    lines = file_lines(corpus / "vllm-docs" / "0.33.0", file)
    starts = [i for i, line in enumerate(lines, 1) if "docker run" in line and '--entrypoint=""' in lines[i]]
    assert len(starts) == 2
    found = [s for line in starts for s in at(real_catalog, file, line, "0.33.0")]
    assert [s.kind for s in found] == ["docker", "docker"]
    for snippet, rank in zip(found, ["0", "1"]):
        assert snippet.model == "nvidia/Qwen3.6-27B-NVFP4" and snippet.image == "$IMAGE"
        assert snippet.speculative_config == {
            "method": "mtp",
            "num_speculative_tokens": 5,
            "draft_tensor_parallel_size": 2,
        }
        assert "$IMAGE" in snippet.placeholders and not snippet.runnable  # the image is the reader's
        assert snippet.argv[snippet.argv.index("--node-rank") + 1] == rank


def test_option_fragments_that_carry_a_speculative_config(real_catalog):
    # `--max-num-seqs 32 \` / `--speculative-config '{…}'`: options to add, not a command. Before: not
    # extracted (only a block starting with --speculative-config was a fragment).
    [glimmer] = at(real_catalog, "recipes/models/meta-models/Muse-Glimmer-30B.yaml", 369, "0.33.0")
    assert glimmer.argv[:2] == ["--max-num-seqs", "32"] and glimmer.reason.startswith("fragment")
    assert glimmer.speculative_config == {
        "method": "dflash",
        "model": "meta-models/Muse-Glimmer-30B-assistant",
        "num_speculative_tokens": 15,
    }
    [step] = at(real_catalog, "StepFun/Step-3.5-Flash.md", 78, "8959cf6")
    assert step.argv[0] == "--hf-overrides" and step.speculative_config["method"] == "step3p5_mtp"


def test_a_closing_fence_on_the_command_line(real_catalog):
    # `vllm serve ibm-granite/granite-3.2-2b-instruct  ```: Markdown does not close the block there.
    # Before: the rest of the recipe guide was one argument (placeholders `` `` ``, not runnable) and
    # the page had an unterminated-fence warning. Now: the command the author meant, with a lint.
    file = "recipes/models/ibm-granite/granite-3.2-2b-instruct.yaml"
    [granite] = at(real_catalog, file, 63, "0.33.0")
    assert granite.argv == ["ibm-granite/granite-3.2-2b-instruct"] and granite.runnable
    assert [(lint.code, lint.line) for lint in granite.lints if lint.file == file] == [("fence-on-command-line", 63)]
    assert not [d for d in real_catalog.diagnostics if d.file == file and d.code == "unterminated-fence"]
    # over two lines: the fence after the continued option
    file = "models/microsoft/Phi-4-multimodal-instruct.yaml"
    [phi] = [
        s for s in at(real_catalog, file, 65, "8959cf6") if any(x.code == "fence-on-command-line" for x in s.lints)
    ]
    assert phi.argv == ["microsoft/Phi-4-multimodal-instruct", "--trust-remote-code"]
    assert [lint.line for lint in phi.lints] == [66]


def test_only_the_command_on_the_fence_line_is_linted_and_the_rest_is_markdown_again(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# T\n\n```bash\nvllm serve a\nvllm serve b ```\n\n## After\n\n```bash\nvllm serve c\n```\n")
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[page])
    lints = {s.argv[0]: [(x.code, x.line) for x in s.lints] for s in catalog.snippets}
    assert lints == {"a": [], "b": [("fence-on-command-line", 5)], "c": []}
    [c] = [s for s in catalog.snippets if s.argv == ["c"]]
    assert c.sources[0].line == 10 and c.sources[0].anchor == "after"


def test_a_feature_without_args_is_at_its_own_line(real_catalog, corpus):
    # MiniMax-M3's `encoder_parallel` has only per-hardware args. Before: recorded at line 1.
    file = "recipes/models/MiniMaxAI/MiniMax-M3.yaml"
    lines = file_lines(corpus / "vllm-docs" / "0.33.0", file)
    found = [
        (s, src)
        for s in real_catalog.snippets
        for src in s.sources
        if src.file == file and src.context == "recipe:features.encoder_parallel.args"
    ]
    assert found and all(lines[src.line - 1].strip() == "encoder_parallel:" for _, src in found)
    assert not [src for s in real_catalog.snippets for src in s.sources if src.file == file and src.line == 1]


def test_python_syntax_warning_says_what_the_block_holds(real_catalog):
    # Design pseudo-code that merely names vllm (`vllm_config`, imports) no longer warns that it
    # "mentions speculative_config" (0.33.0 docs/design/custom_op.md, arch_overview.md, …).
    warned = {d.file for d in real_catalog.diagnostics if d.code == "python-syntax"}
    assert not warned & {"docs/design/custom_op.md", "docs/design/arch_overview.md", "docs/design/plugin_system.md"}
    place = Place("t", "1", "p.md", 10)
    # the words now sit in the `python-syntax` lint of the snippet that does not run (issue 45)
    assert "mentions speculative_config" in from_python("LLM(speculative_config={\n", place)[0][0].lints[0].message
    assert "holds a vLLM command line" in from_python('cmd = "vllm serve m --x\n', place)[0][0].lints[0].message
    assert from_python("def f(*, vllm_config):\n", place) == ([], [])


def test_a_default_value_expansion_is_its_default(real_catalog):
    # `--port "${PORT:-8000}"`: bash gives 8000 where PORT is unset. Before: a placeholder (not runnable).
    [pro] = at(real_catalog, "recipes/models/deepseek-ai/DeepSeek-V4-Pro.yaml", 845, "0.33.0")
    assert pro.argv[pro.argv.index("--port") + 1] == "8000" and pro.runnable and pro.placeholders == []
    [kimi] = at(real_catalog, "recipes/models/moonshotai/Kimi-K2.5.yaml", 318, "0.33.0")
    assert kimi.argv[1:3] == ["--port", "8000"] and kimi.placeholders == ["$MAX_MODEL_LEN"]
    # a block that sets the variable itself: its value is not the default
    [own] = from_shell_text('PORT=9000\nvllm serve m --port "${PORT:-8000}"', Place("t", "1", "p.md", 1))
    assert own.argv == ["m", "--port", "${PORT:-8000}"] and not own.runnable


@pytest.mark.network  # the 0.34.0 sdist from PyPI once, then from the cache
def test_preset_runbooks_of_the_0340_sdist(sdist_0340):
    # Presets' `runbook:` Markdown (0.34.0's recipes tree; the corpora's recipes snapshot has no
    # presets): before, not read at all.
    tree, catalog = sdist_0340
    file = "recipes/models/moonshotai/Kimi-K3.yaml"
    lines = file_lines(tree, file)
    found = {
        src.line: (s, src)
        for s in catalog.snippets
        for src in s.sources
        if src.file == file and src.context.endswith(".runbook")
    }
    serve_lines = [line for line, (s, _) in found.items() if s.kind == "serve" and s.model]
    assert serve_lines and all("vllm serve moonshotai/Kimi-K3" in lines[line - 1] for line in serve_lines)
    s, src = found[serve_lines[0]]
    assert re.fullmatch(r"fence:bash in recipe:presets\.\w+\.runbook", src.context) and s.model == "moonshotai/Kimi-K3"
    assert src.written_for.basis == "release"  # the recipe is in the release's tree: its line
    # The presets themselves are deltas on the command the recipes site builds for a GPU, strategy and
    # feature selection (rules not in the recipe): not composed, and said so at the `presets:` line.
    [said] = [d for d in catalog.diagnostics if d.file == file and d.code == "presets-not-composed"]
    assert lines[said.line - 1] == "presets:" and said.message.startswith("9 tuned preset(s) (gb200_agentx_agg, ")


NAIVE_COMMAND = re.compile(r"\bvllm serve\b|--speculative[-_]config\b")


@pytest.mark.network
def test_recall_on_the_0340_sdist(sdist_0340):
    """Every line inside a code fence (Markdown pages, recipe guides and runbooks) that shows
    `vllm serve` or a speculative config is inside some snippet's source: a naive scan independent of
    the extractor. What is left is `python3 -m dynamo.vllm` (Dynamo's worker, not a vLLM command)."""
    tree, catalog = sdist_0340
    spans: dict[str, list[tuple[int, int]]] = {}
    for snippet in catalog.snippets:
        for src in snippet.sources:
            spans.setdefault(src.file, []).append((src.line, src.line + src.text.count("\n")))
    seen, missed = 0, []
    for path in sorted([*tree.glob("docs/**/*.md"), *tree.glob("recipes/models/**/*.yaml")]):
        file = path.relative_to(tree).as_posix()
        lines, fence, start = path.read_text().split("\n"), False, 0
        for i, line in enumerate(lines, 1):
            text = line.strip()
            if text.startswith("```"):
                fence, start = (not fence, i) if (not fence or text == "```") else (fence, start)
                continue
            if (
                fence
                and NAIVE_COMMAND.search(line)
                and not text.startswith("#")
                or fence
                and re.match(r"#\s*vllm serve \S", text)
            ):
                seen += 1
                if not any(a <= i <= b for a, b in spans.get(file, [])):
                    missed.append((file, i, start))
    dynamo = [m for m in missed if "dynamo.vllm" in "\n".join(file_lines(tree, m[0])[m[2] : m[1]])]
    assert seen > 900 and missed == dynamo and len(missed) <= 2
