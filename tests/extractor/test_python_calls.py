from driftmatrix.extractor.python_calls import from_python
from driftmatrix.extractor.snippet_builder import Place

PLACE = Place("vllm-docs", "9.9", "docs/x.md", 10)


def test_llm_call_with_resolved_names_and_cli_equivalent():
    code = """from vllm import LLM
model_path = "org/target"
draft = {"model": "org/draft", "num_speculative_tokens": 2}
llm = LLM(
    model=model_path,
    speculative_config=draft,
    enforce_eager=True,
    enable_prefix_caching=False,
    max_model_len=2048,
)
"""
    (snippet,), diags = from_python(code, PLACE)
    assert diags == []
    assert snippet.kind == "python" and snippet.runnable
    assert snippet.model == "org/target"
    assert snippet.speculative_config == {"model": "org/draft", "num_speculative_tokens": 2}
    assert snippet.argv[:1] == ["org/target"]
    assert "--enforce-eager" in snippet.argv and "--no-enable-prefix-caching" in snippet.argv
    assert snippet.argv[snippet.argv.index("--max-model-len") + 1] == "2048"
    assert snippet.sources[0].line == 13  # the LLM( line: block starts at 10, call on its 4th line
    assert snippet.sources[0].text.startswith("LLM(")


def test_async_engine_args_and_unresolved_expressions():
    code = """import os
args = AsyncEngineArgs(model=os.environ["MODEL"], speculative_config={"method": "ngram", "num_speculative_tokens": 3})
"""
    (snippet,), _ = from_python(code, PLACE)
    assert snippet.python["call"] == "AsyncEngineArgs"
    assert snippet.python["kwargs"]["model"] == {"unresolved": "os.environ['MODEL']"}
    assert not snippet.runnable and "unresolved Python expression" in snippet.reason
    assert snippet.speculative_config["method"] == "ngram"


def test_calls_without_speculative_config_are_ignored_and_bad_python_does_not_run():
    assert from_python('LLM(model="a")\nspeculative_config = None', PLACE) == ([], [])
    (snippet,), diags = from_python("llm = LLM(model='a', speculative_config={\n", PLACE)
    # issue 45: a snippet that does not run (its lint makes the page doc-drift), no longer only a warning
    assert diags == [] and not snippet.runnable and snippet.lints[0].code == "python-syntax"
    assert snippet.lints[0].line >= 10
