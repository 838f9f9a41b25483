"""Bad input gets a precise per-item diagnosis; everything else is still extracted."""

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.markdown_pages import markdown_snippets
from driftmatrix.extractor.snippet_builder import Place
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

GOOD = "# Good\n\n```bash\nvllm serve good/model --port 8001\n```\n"
YAML_BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{n}: &{n} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)


def make_tree(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    (root / "mkdocs.yaml").write_text("site_name: bad\n")
    (docs / "good.md").write_text(GOOD)
    (docs / "unterminated.md").write_text("# U\n\n```bash\nvllm serve unterminated/fence --x 1\n")
    (docs / "latin1.md").write_bytes("# Caf\xe9\n\n```bash\nvllm serve latin1/model\n```\n".encode("latin-1"))
    (docs / "quotes.md").write_text('```bash\nvllm serve q/model --speculative-config \'{"method": "ngram"}\n```\n')
    (docs / "json.md").write_text("```bash\nvllm serve j/model --speculative-config '{\"method\": ngram}'\n```\n")
    (docs / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + bytes(range(256)) * 4)
    (docs / "bomb.md").write_text("```yaml\n" + YAML_BOMB + "args: ['vllm serve bomb/model']\n```\n")
    (docs / "big.md").write_bytes(b"x" * (50 * 1024 * 1024))
    (docs / "python.md").write_text("```python\nLLM(model='p', speculative_config={\n```\n")
    models = root / "recipes" / "models" / "org"
    models.mkdir(parents=True)
    (models / "bomb.yaml").write_text(YAML_BOMB + "model:\n  model_id: org/bomb\n  base_args: *i\n")
    (models / "broken.yaml").write_text("model: [unclosed\n")
    return root


def test_every_bad_file_is_diagnosed_and_nothing_else_is_lost(tmp_path):
    catalog, unusable = extract(stable=stable_pin(SEED_CPU), sources=[make_tree(tmp_path / "tree")])
    assert unusable == []
    by_model = {s.model: s for s in catalog.snippets}
    assert by_model["good/model"].runnable
    assert by_model["unterminated/fence"].sources[0].line == 4  # an unclosed fence runs to the end
    assert by_model["latin1/model"].runnable
    assert not by_model["q/model"].runnable and "never closed" in by_model["q/model"].reason
    err = by_model["j/model"].speculative_config_error
    assert err["colno"] == 12 and err["value"] == '{"method": ngram}'
    assert "bomb/model" not in by_model  # an alias bomb is refused (extractor/bounds.py), never expanded
    codes = {(d.file, d.code) for d in catalog.diagnostics}
    assert ("docs/latin1.md", "invalid-utf8") in codes
    assert ("docs/binary.md", "binary-file") in codes
    assert ("docs/big.md", "too-large") in codes
    assert ("docs/python.md", "python-syntax") in codes
    assert ("recipes/models/org/bomb.yaml", "yaml-alias-expansion") in codes
    assert ("docs/bomb.md", "yaml-alias-expansion") in codes
    assert ("recipes/models/org/broken.yaml", "yaml-error") in codes
    assert ("docs/unterminated.md", "unterminated-fence") in codes
    assert ("docs/json.md", "invalid-json") in codes and ("docs/quotes.md", "unbalanced-quote") in codes
    assert ("docs/good.md", "unterminated-fence") not in codes
    latin1 = next(d for d in catalog.diagnostics if d.code == "invalid-utf8")
    assert latin1.line == 1 and "byte 5" in latin1.message


def test_cli_reports_diagnostics_on_stderr_and_keeps_results(tmp_path):
    tree = make_tree(tmp_path / "tree")
    out = tmp_path / "snippets.json"
    proc = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "extract", str(tree), str(tmp_path / "nope"), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1  # one SOURCE could not be read at all
    assert "nope: no such file or directory" in proc.stderr
    assert "docs/binary.md: contains NUL bytes" in proc.stderr
    data = json.loads(out.read_text())
    assert data["schema"] == 2
    assert "good/model" in {s["model"] for s in data["snippets"]}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(
            [
                "```",
                "```bash",
                "```yaml",
                "```python",
                "    ",
                '=== "T"',
                "!!! note",
                "???+ tip",
                "<details>",
                "</details>",
                "vllm serve",
                " m",
                " --speculative-config",
                " '{\"a\": 1}'",
                " $'x\\'y'",
                " \\",
                "\\  ",
                " # c",
                '"',
                "'",
                "$(",
                "${X}",
                " <M>",
                " {d}",
                "docker run vllm/vllm-openai",
                " --model x",
                "LLM(model='a', speculative_config={})",
                'args: ["vllm serve a"]',
                '--8<-- "examples/a.py"',
                "#",
                "## H",
                "\n",
                "\n\n",
                "\t",
                "é",
                "\x00",
                "<<EOF",
                "EOF",
            ]
        ),
        max_size=60,
    ).map("".join)
)
def test_markdown_fuzz_never_raises(text):
    snippets, diagnostics = markdown_snippets(text, Place("fuzz", "0", "f.md", 1, url="https://x/"), None)
    for snippet in snippets:
        assert snippet.id and snippet.sources[0].line >= 1
        json.dumps(snippet.to_dict())
    assert all(d.code != "internal-error" for d in diagnostics), diagnostics


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text):
    snippets, diagnostics = markdown_snippets("vllm\n" + text, Place("fuzz", "0", "f.md", 1), None)
    assert all(d.code != "internal-error" for d in diagnostics), diagnostics
