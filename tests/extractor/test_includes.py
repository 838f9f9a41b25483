"""`--8<--` includes of examples/**/*.py are read when the file is in the tree."""

import shutil
from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU


def test_included_example_is_extracted_and_missing_one_is_reported(tmp_path: Path, corpus: Path):
    tree = tmp_path / "vllm-docs-tree"
    (tree / "docs" / "features").mkdir(parents=True)
    shutil.copy(corpus / "vllm-docs" / "0.33.0" / "mkdocs.yaml", tree / "mkdocs.yaml")
    (tree / "examples" / "offline_inference").mkdir(parents=True)
    (tree / "examples" / "offline_inference" / "spec_decode.py").write_text(
        'from vllm import LLM\n\n\ndef main():\n    llm = LLM(\n        model="meta-llama/Llama-3.1-8B-Instruct",\n'
        '        speculative_config={"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",\n'
        '                            "num_speculative_tokens": 2},\n    )\n'
    )
    (tree / "docs" / "features" / "spec.md").write_text(
        '# Spec\n\n??? code\n\n    ```python\n    --8<-- "examples/offline_inference/spec_decode.py"\n    ```\n\n'
        '--8<-- "examples/offline_inference/missing.py"\n'
    )
    result, _ = extract(stable=stable_pin(SEED_CPU), sources=[tree])
    (snippet,) = result.snippets
    assert snippet.kind == "python" and snippet.speculative_config["method"] == "eagle3"
    assert snippet.model == "meta-llama/Llama-3.1-8B-Instruct"
    source = snippet.sources[0]
    assert (source.file, source.line) == ("docs/features/spec.md", 6)
    assert source.context == "include:examples/offline_inference/spec_decode.py:5"
    (diag,) = [d for d in result.diagnostics if d.code == "unresolved-include"]
    assert diag.line == 9 and "missing.py" in diag.message
