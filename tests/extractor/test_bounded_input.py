"""Bounded input (extractor/bounds.py): docs are untrusted. A YAML alias bomb is refused, an
oversized page or line is diagnosed, no symbolic link is followed out of the tree, and headings
cost linear time; everything else is still extracted."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from driftmatrix.extractor import bounds, yaml_nodes
from driftmatrix.extractor.catalog import extract
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

GOOD_RECIPE = "model:\n  model_id: org/good\n  base_args: [--max-model-len, '4096']\n"
GOOD_PAGE = "# Good\n\n```bash\nvllm serve good/model --port 8001\n```\n"


def alias_bomb(levels: int, use: str = "model: {model_id: *top}\n") -> str:
    """A "billion laughs": 9 x's, then each level nine aliases of the one before (x9 per level);
    `*top` names the last level (with 8 levels: ~300 bytes, ~43 million x's expanded)."""
    names = list("abcdefghijkl"[:levels])
    text = f"{names[0]}: &{names[0]} [x,x,x,x,x,x,x,x,x]\n"
    for prev, name in zip(names, names[1:]):
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    return text.replace(f"&{names[-1]} ", "&top ") + use


def recipes_tree(root: Path) -> Path:
    """A recipes checkout shaped like the real one (recipes/8959cf6): models/<org>/<repo>.yaml + taxonomy.yaml."""
    (root / "models" / "org").mkdir(parents=True)
    (root / "taxonomy.yaml").write_text("features: {}\n")
    (root / "models" / "org" / "good.yaml").write_text(GOOD_RECIPE)
    return root


def run_cli(tmp_path: Path, *sources: Path, timeout: float = 60) -> tuple[dict, str]:
    """`driftmatrix extract` in a fresh process (a regression to unbounded work fails on the timeout)."""
    out = tmp_path / "snippets.json"
    proc = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "extract", *map(str, sources), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.is_file(), proc.stderr
    return json.loads(out.read_text()), proc.stdout + proc.stderr


def codes(data: dict) -> set[tuple[str, str]]:
    return {(d["file"], d["code"]) for d in data["diagnostics"]}


def test_the_300_byte_alias_bomb_recipe_is_refused_and_the_rest_extracts(tmp_path):
    tree = recipes_tree(tmp_path / "recipes")
    bomb = alias_bomb(8)
    assert len(bomb) < 310
    (tree / "models" / "org" / "bomb.yaml").write_text(bomb)
    data, said = run_cli(tmp_path, tree)
    assert ("models/org/bomb.yaml", "yaml-alias-expansion") in codes(data)
    assert "alias bomb" in said  # the diagnostic reaches stderr, saying what it is
    assert {s["model"] for s in data["snippets"]} == {"org/good"}
    assert (tmp_path / "snippets.json").stat().st_size < 100_000


def test_real_anchors_and_aliases_still_work(real_catalog, snippets_from):
    """The real recipes that use aliases (hardware overrides, a reused compilation config) read as before."""
    assert not [d for d in real_catalog.diagnostics if d.code == "yaml-alias-expansion"]
    for file in (
        "Google/gemma-4-26B-A4B-it",
        "MiniMaxAI/MiniMax-M3.1-Flash",
        "deepseek-ai/DeepSeek-V4.1-Flash",
        "zai-org/GLM-5.3-Flash",
    ):
        assert snippets_from("vllm-docs", "0.33.0", f"recipes/models/{file}.yaml"), file


def test_alias_bombs_in_markdown_are_refused_per_block(tmp_path):
    """A YAML code block and a page's front matter go through the same bounded loader."""
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    (tmp_path / "mkdocs.yaml").write_text("site_name: t\n")
    front = "---\n" + alias_bomb(6, "title: *top\n") + "---\n"
    block = "```yaml\n" + alias_bomb(6, "args: [vllm serve bomb/model, *top]\n") + "```\n"
    page.write_text(front + "\n" + GOOD_PAGE + "\n" + block)
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[tmp_path])
    assert [s.model for s in catalog.snippets] == ["good/model"]
    assert len(catalog.snippets[0].sources[0].title) < 100  # the front matter's bomb is no title
    diag = next(d for d in catalog.diagnostics if d.code == "yaml-alias-expansion")
    assert diag.file == "docs/page.md" and diag.line > 10 and "refused" in diag.message


def test_an_alias_holding_itself_is_refused():
    with pytest.raises(yaml_nodes.YAMLTooLarge, match="contains it"):
        yaml_nodes.compose_all("model: &m {model_id: *m}\n")
    assert yaml_nodes.load("a: &a [1, 2]\nb: *a\n") == {"a": [1, 2], "b": [1, 2]}  # a plain alias is fine
    assert isinstance(yaml_nodes.YAMLTooLarge("x"), yaml.YAMLError)


def test_an_oversized_page_and_a_long_line_are_diagnosed_and_the_rest_is_read(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "mkdocs.yaml").write_text("site_name: t\n")
    (docs / "good.md").write_text(GOOD_PAGE)
    big = "```bash\nvllm serve big/model\n```\n"
    (docs / "big.md").write_text(big + "x" * (bounds.MAX_PAGE_BYTES - len(big) + 1))
    long_word = "a" * (bounds.MAX_LINE_CHARS + 1)
    (docs / "long.md").write_text(
        "# Long\n\n```bash\nvllm serve kept/model\n```\n\n"  # lines 1-5
        f"```bash\nvllm serve long/model --x {long_word}\n```\n\n"  # the long line is line 8
        f"```bash\nvllm serve cut/model \\\n  --x {long_word} \\\n  --port 1\n```\n"
    )  # no command cut short
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[tmp_path])
    assert {s.model for s in catalog.snippets} == {"good/model", "kept/model"}
    diags = {(d.file, d.code, d.line) for d in catalog.diagnostics}
    assert ("docs/big.md", "too-large", None) in diags
    assert ("docs/long.md", "line-too-long", 8) in diags and ("docs/long.md", "line-too-long", 13) in diags


def test_commands_sharing_a_line_are_bounded_and_said(tmp_path):
    """Each command's record carries its line's text (annotate patches by it): 2,000 commands on one
    line once wrote 2,000 copies of it. A line keeps MAX_COMMANDS_PER_LINE; the rest are said."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "mkdocs.yaml").write_text("site_name: t\n")
    line = "; ".join(f"vllm serve org/m{i}" for i in range(2000))
    (docs / "many.md").write_text(f"# Many\n\n```bash\n{line}\n```\n\n```bash\nvllm serve a/b; vllm serve c/d\n```\n")
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[tmp_path])
    models = [s.model for s in catalog.snippets]
    assert len(models) == bounds.MAX_COMMANDS_PER_LINE + 2 and {"a/b", "c/d"} <= set(models)
    said = [lint for s in catalog.snippets for lint in s.lints if lint.code == "commands-left-out"]
    assert len(said) == 1 and said[0].line == 4
    path = tmp_path / "snippets.json"
    catalog.write(path)
    assert path.stat().st_size < 100 * len(line)  # not 2,000 copies of the line


def test_a_recipe_whose_commands_multiply_its_lines_is_refused(tmp_path):
    """Every recipe command carries the default features' arguments: 2,000 opt-in features x 2,000
    default arguments would compose 4 million words from 4,000 lines. Refused whole, said."""
    models = tmp_path / "models" / "org"
    models.mkdir(parents=True)
    features = {f"f{i}": {"args": ["--x", "1"]} for i in range(2000)}
    features["defaults"] = {"args": [f"--d{i}" for i in range(2000)]}
    recipe = {"model": {"model_id": "org/big"}, "features": features, "opt_in_features": [f"f{i}" for i in range(2000)]}
    (models / "big.yaml").write_text(yaml.safe_dump(recipe))
    (models / "ok.yaml").write_text(yaml.safe_dump({"model": {"model_id": "org/ok"}}))
    (tmp_path / "taxonomy.yaml").write_text("{}\n")
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[tmp_path])
    assert [s.model for s in catalog.snippets] == ["org/ok"]
    assert any(d.code == "recipe-shape" and "more than" in d.message for d in catalog.diagnostics)


def outside_tree(tmp_path: Path) -> tuple[Path, str]:
    """A folder outside the tree, every file of it holding a unique canary string (and a command)."""
    canary = f"canary-{uuid.uuid4().hex}"
    out = tmp_path / "outside"
    out.mkdir()
    page = f"---\nlicense: mit\nmodel_id: {canary}/card\n---\n# {canary}\n\n```bash\nvllm serve {canary}/model\n```\n"
    (out / "page.md").write_text(page)
    (out / "recipe.yaml").write_text(f"model:\n  model_id: {canary}/recipe\n")
    (out / "example.py").write_text(f"from vllm import LLM\nLLM(model='{canary}/py')\n")
    (out / "PKG-INFO").write_text(f"Version: {canary}\n")
    return out, canary


def test_symlinks_out_of_the_tree_are_never_read(tmp_path):
    out, canary = outside_tree(tmp_path)
    docs_tree, docs = tmp_path / "vllm-docs", tmp_path / "vllm-docs" / "docs"
    (docs / "real").mkdir(parents=True)
    (docs_tree / "mkdocs.yaml").write_text("site_name: t\n")
    (docs_tree / "PKG-INFO").symlink_to(out / "PKG-INFO")
    (docs / "real" / "good.md").write_text(GOOD_PAGE + '\n--8<-- "examples/evil.py"\n')
    (docs / "inside.md").symlink_to(docs / "real" / "good.md")  # inside the tree: read under its own path
    (docs / "evil.md").symlink_to(out / "page.md")
    (docs / "sub").symlink_to(out)
    (docs / "root").symlink_to("/")
    (docs_tree / "examples").mkdir()
    (docs_tree / "examples" / "evil.py").symlink_to(out / "example.py")
    recipes = recipes_tree(tmp_path / "recipes")
    (recipes / "models" / "org" / "evil.yaml").symlink_to(out / "recipe.yaml")
    (recipes / "models" / "elsewhere").symlink_to(out)
    card = tmp_path / "card"
    card.mkdir()
    (card / "README.md").symlink_to(out / "page.md")
    (card / "own.md").write_text(GOOD_PAGE)
    data, said = run_cli(tmp_path, docs_tree, recipes, card)
    written = (tmp_path / "snippets.json").read_text()
    assert canary not in written and canary not in said
    assert {s["model"] for s in data["snippets"]} == {"good/model", "org/good"}
    assert {src["file"] for s in data["snippets"] for src in s["sources"]} >= {"docs/inside.md", "docs/real/good.md"}
    found = codes(data)
    for file in ("docs/evil.md", "docs/sub", "docs/root", "models/org/evil.yaml", "models/elsewhere", "README.md"):
        assert (file, "outside-tree") in found, file
    assert ("docs/real/good.md", "unresolved-include") in found


def test_headings_cost_linear_time(tmp_path):
    """Code spans and `{#id}` attribute lists were matched by cubic regexes: 40 headings of 1000
    backticks took minutes. A fresh process with a generous timeout: a regression fails, not hangs."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "mkdocs.yaml").write_text("site_name: t\n")
    heads = "".join(
        f"## {'{#a ' * 250}\n\n## {'`' * 999}\n\n```bash\nvllm serve h{n}/model\n```\n\n" for n in range(40)
    )
    (docs / "page.md").write_text("# " + "`" * (bounds.MAX_HEADING_CHARS * 50) + "\n\n" + heads)
    data, _ = run_cli(tmp_path, tmp_path, timeout=30)
    assert len(data["snippets"]) == 40


def test_a_saved_html_page_nested_thousands_deep_costs_linear_time(tmp_path):
    """Unclosed `<pre>`s nest: looking inside each for its `<code>` and text cost the square of the
    page (60 kB took 4 minutes). A fresh process with a generous timeout."""
    page = tmp_path / "page.html"
    page.write_text("<h2>Run</h2><pre><code>vllm serve nested/model\n" * 20_000)
    data, _ = run_cli(tmp_path, page, timeout=30)
    assert {s["model"] for s in data["snippets"]} == {"nested/model"}
