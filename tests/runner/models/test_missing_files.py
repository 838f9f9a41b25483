"""A missing file hides nothing else (issue 58 point 6, runner/models/missing_files.py): a chat template
that is not where the command runs — the reader's own file, a file of vLLM's source tree this build's
sdist lacks, a path in the reader's container — is stood in for the parser and the engine config, so
the rest of the command is judged on the real CPU build; the server is never started on the stand-in,
and the SKIP says what the file is."""

from __future__ import annotations

from runhelp import catalog_of, docs_tree, pick, run_judged

PAGE = """# Templates

```bash
pip install vllm==0.32.0
```

## The reader's own template

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 256 --chat-template ./my_template.jinja
```

## And a parser vLLM removed

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 256 --chat-template ./my_template.jinja --enable-auto-tool-choice --tool-call-parser minimax
```

## A template in a container, an option no release has

```bash
vllm serve Qwen/Qwen3-0.6B --max-model-len 256 --chat-template /opt/app/template.jinja --no-such-option 1
```
"""


def test_a_missing_template_is_stood_in_and_hides_nothing_else(targets_toml, tmp_path):
    root = docs_tree(tmp_path / "site", PAGE)
    snippets, ids = catalog_of(root)
    own, parser, container = (
        ids[a][0]
        for a in (
            "the-readers-own-template",
            "and-a-parser-vllm-removed",
            "a-template-in-a-container-an-option-no-release-has",
        )
    )
    found, results, judge = run_judged(snippets, targets_toml, "start", "nightly", tmp_path)
    mine = pick(found, own, "nightly")
    assert (mine.verdict, mine.stage) == ("SKIP", "start"), (mine.verdict, mine.stage, mine.reason)
    assert "./my_template.jinja is the reader's own file" in mine.reason
    assert any("stood in for the parser and the engine config" in n for n in mine.evidence.notes)
    refused = pick(found, container, "nightly")  # vLLM's parser speaks for the rest: not hidden by the file
    assert refused.verdict == "FAIL" and "--no-such-option" in str(refused.evidence.exception), refused.reason
    assert any("a path on the reader's machine or in their container" in n for n in refused.evidence.notes)
    removed = next(s for s in results.snippets if s.id == parser)
    assert pick(found, parser, "nightly").verdict == "SKIP"  # parse and config took the stand-in; start: the file
    j = judge.of(removed)
    assert (j.kind, j.decided_by) == ("doc-drift", "history"), j.summary  # the removed parser is not hidden
    assert "--tool-call-parser minimax" in j.summary
