"""Issue 45, point 6: a Python block holding vLLM usage that Python's parser rejects as a reader pastes
it (dedented) is a snippet that does not run, with a breaking `python-syntax` lint in Python's words
at the page line of the error; one that parses once dedented is read as before; a shell command under
a python fence is read as the shell block its reader runs."""

from __future__ import annotations

from pathlib import Path

from driftmatrix.extractor.markdown_pages import markdown_snippets
from driftmatrix.extractor.snippet_builder import Place
from driftmatrix.extractor.snippet_record import BREAKING_LINTS

CORPUS = Path(__file__).parents[2].parent / "shared" / "corpus"
PLACE = Place("vllm-docs", "0.0.0", "docs/list.md", 1)

BROKEN_IN_A_LIST = """# Offline inference

1. Build the engine:

   ```python
   from vllm import LLM
       llm = LLM(model="facebook/opt-125m",
                 speculative_config={"method": "ngram", "num_speculative_tokens": 3})
   ```

2. Generate.
"""

PARSES_ONCE_DEDENTED = """# Offline inference

1. Build the engine:

   ```python
      from vllm import LLM
      llm = LLM(model="facebook/opt-125m",
                speculative_config={"method": "ngram", "num_speculative_tokens": 3})
   ```
"""


def test_a_block_indented_wrong_inside_a_list_does_not_run_as_written():
    (snippet,), diags = markdown_snippets(BROKEN_IN_A_LIST, PLACE, None)
    assert diags == []  # the lint is the record; extract_file repeats it on stderr (test below)
    assert (snippet.kind, snippet.runnable, snippet.argv) == ("python", False, [])
    assert snippet.reason == "python-syntax: IndentationError: unexpected indent (line 2 of the block)"
    [lint] = snippet.lints
    assert lint.code == "python-syntax" and lint.code in BREAKING_LINTS
    assert lint.message.startswith("IndentationError: unexpected indent (line 2 of the block): Python 3.")
    assert (lint.file, lint.line) == ("docs/list.md", 7)  # the page line of `llm = LLM(`
    assert BROKEN_IN_A_LIST.split("\n")[lint.line - 1].strip().startswith("llm = LLM(")
    assert snippet.sources[0].line == 6 and snippet.sources[0].text.startswith("from vllm import LLM\n    llm")


def test_a_block_that_parses_once_dedented_stays_a_normal_snippet():
    (snippet,), diags = markdown_snippets(PARSES_ONCE_DEDENTED, PLACE, None)
    assert diags == [] and snippet.runnable and snippet.lints == []
    assert snippet.python["call"] == "LLM" and snippet.model == "facebook/opt-125m"
    assert snippet.speculative_config == {"method": "ngram", "num_speculative_tokens": 3}
    assert snippet.sources[0].line == 7  # the call's own page line


def test_two_broken_blocks_are_two_snippets():
    other = BROKEN_IN_A_LIST.replace("opt-125m", "opt-350m")
    (a,), _ = markdown_snippets(BROKEN_IN_A_LIST, PLACE, None)
    (b,), _ = markdown_snippets(other, PLACE, None)
    assert a.id != b.id  # no argv was read: the id hashes the block, not an empty command


def test_a_repl_session_is_read_without_its_prompts():
    session = (
        '```pycon\n>>> from vllm import LLM\n>>> llm = LLM(model="facebook/opt-125m",\n'
        '...           speculative_config={"method": "ngram", "num_speculative_tokens": 3})\n```\n'
    )
    (snippet,), _ = markdown_snippets(session, PLACE, None)
    assert snippet.runnable and snippet.model == "facebook/opt-125m" and snippet.lints == []


def test_a_shell_command_under_a_python_fence_is_read_as_the_shell_block_it_is(tmp_path):
    """vllm-gaudi docs/configuration/warm-up/managing_warm-up.md:44: ```python around `export …` and
    `VAR=… \\` … `vllm serve …` lines (49-55). Its reader runs it in a shell (the page calls it "the serving command");
    Python would stop on line 11 of it. Before: only a warning, the command lost."""
    from driftmatrix.extractor.corpus import detect, extract_file

    root = CORPUS / "thirdparty" / "vllm-gaudi-091bbadd"
    page = root / "docs" / "configuration" / "warm-up" / "managing_warm-up.md"
    found, diags = extract_file(detect(root), page)
    [serve] = [s for s in found if s.sources[0].line == 49]
    assert serve.kind == "serve" and serve.model == "meta-llama/Llama-3.1-8B-instruct"
    assert "--weights-load-device" in serve.argv and serve.env["PT_HPU_WEIGHT_SHARING"] == "0"
    assert serve.sources[0].context == "fence:python"
    codes = {lint.code for lint in serve.lints}
    assert "python-fence-holds-shell" in codes and not codes & BREAKING_LINTS  # not doc-drift: a shell runs it
    [fence] = [lint for lint in serve.lints if lint.code == "python-fence-holds-shell"]
    assert fence.line == 45 and "marked python but holds a shell command" in fence.message
    assert "line 11 of the block: SyntaxError: invalid decimal literal" in fence.message
    [warned] = [d for d in diags if d.code == "python-fence-holds-shell"]  # still on stderr
    assert (warned.severity, warned.file, warned.line) == (
        "warning",
        "docs/configuration/warm-up/managing_warm-up.md",
        45,
    )


def test_the_lint_reaches_stderr_from_a_page(tmp_path):
    from driftmatrix.extractor.corpus import detect, extract_file

    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "mkdocs.yaml").write_text("site_name: t\n")
    (docs / "list.md").write_text(BROKEN_IN_A_LIST)
    found, diags = extract_file(detect(tmp_path), docs / "list.md")
    [warned] = [d for d in diags if d.code == "python-syntax"]
    assert (warned.severity, warned.file, warned.line) == ("warning", "docs/list.md", 7)
    assert warned.message == found[0].lints[0].message
