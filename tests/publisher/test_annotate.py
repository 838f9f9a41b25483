"""`driftmatrix annotate` on the real corpus pages (copied to a temp dir) and on a sample
page with the containers doc writers use: warnings land right after the failing command's
code block, at its indentation; re-running changes nothing; a fixed command's warning goes;
every other line stays byte-identical; the patched pages build with vLLM's own Markdown
extensions."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from publisher import annotate as ann
from publisher.results import load

HERE = Path(__file__).resolve().parent


def vllm_markdown_extensions(corpus) -> str:
    """The `markdown_extensions:` section of vLLM's own mkdocs.yaml, verbatim (its `!!python`
    tags are for mkdocs' loader, so the text is reused rather than re-serialised)."""
    vllm_yaml = (corpus / "vllm-docs" / "0.33.0" / "mkdocs.yaml").read_text()
    return re.search(r"^markdown_extensions:\n(?:[ \-#].*\n|\n)+", vllm_yaml, re.M).group(0)


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "driftmatrix.cli", "annotate", *map(str, args)],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def docs_copy(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("docs") / "vllm-0.33.0"
    shutil.copytree(corpus / "vllm-docs" / "0.33.0", root)
    return root


def _text_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_corpus_pages_idempotent_and_otherwise_identical(docs_copy, corpus, site_inputs, tmp_path):
    original = _text_files(corpus / "vllm-docs" / "0.33.0")
    once = tmp_path / "once"
    r = cli("--docs", docs_copy, "--snippets", site_inputs["snippets"], "--outcomes", site_inputs["parse"], "-o", once)
    assert r.returncode == 0, r.stderr
    patched = _text_files(once)
    changed = sorted(k for k in patched if patched[k] != original.get(k))
    assert changed and set(patched) == set(original)
    inserted = 0
    for rel in changed:
        before, after = original[rel].decode(), patched[rel].decode()
        assert ann.strip(after) == before  # remove the inserted blocks: byte-identical again
        diff = [ln for ln in __import__("difflib").ndiff(before.split("\n"), after.split("\n")) if ln[:1] in "+-"]
        assert all(ln.startswith("+ ") for ln in diff), rel  # only insertions
        inserted += after.count("<!-- driftmatrix:begin")
    results = load(site_inputs["snippets"], [site_inputs["parse"]])
    failing = {s.id for s in results.snippets for c in results.columns
               if (o := results.cell(s.id, c)) and o.verdict == "FAIL"
               and any(src.file.endswith(".md") for src in s.sources)}
    assert inserted >= len(failing) > 0

    again = tmp_path / "again.patch"
    r = cli("--docs", once, "--snippets", site_inputs["snippets"], "--outcomes", site_inputs["parse"], "--patch", again)
    assert r.returncode == 0 and again.read_text() == ""  # nothing to change the second time

    # The failing target dropped (its commands now pass on every target checked): warnings go.
    nightly = tmp_path / "nightly.jsonl"
    nightly.write_text("".join(ln + "\n" for ln in site_inputs["parse"].read_text().splitlines()
                               if ln.strip() and json.loads(ln)["target"]["name"] == "nightly"))
    fixed = tmp_path / "fixed"
    r = cli("--docs", once, "--snippets", site_inputs["snippets"], "--outcomes", nightly, "-o", fixed)
    assert r.returncode == 0, r.stderr
    assert _text_files(fixed) == original


def test_warning_says_what_fails_where_and_where_it_works(docs_copy, site_inputs):
    results = load(site_inputs["snippets"], [site_inputs["parse"]])
    result = ann.annotate(results, docs_copy)
    inserts = [i for p in result.patches for i in p.inserts]
    assert inserts
    for i in inserts:
        o = {c.name: results.cell(i.snippet_id, c) for c in results.columns}
        assert i.kind == "warning" and o["stable"].verdict == "FAIL"
        assert i.admonition.startswith('!!! warning "Is rejected by the argument parser of vLLM 0.20.1"')
        assert o["stable"].evidence.exception["type"] in i.admonition
        if o["nightly"].verdict == "PASS":
            assert "Works on vLLM 0.32.0." in i.admonition


@pytest.fixture(scope="module")
def sample(site_inputs, tmp_path_factory):
    """The sample page (tests/publisher/sample-docs), extracted by the real extractor: the same
    command as a real corpus page, so the real outcomes of that command apply."""
    root = tmp_path_factory.mktemp("sample")
    tree = root / "sample-docs"
    shutil.copytree(HERE / "sample-docs", tree)
    snippets = root / "snippets.json"
    r = subprocess.run([sys.executable, "-m", "driftmatrix.cli", "extract", str(tree), "-q", "-o", str(snippets)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    outcomes = root / "outcomes.jsonl"
    ids = {s["id"] for s in json.loads(snippets.read_text())["snippets"]}
    outcomes.write_text("".join(ln + "\n" for ln in site_inputs["parse"].read_text().splitlines()
                                if ln.strip() and json.loads(ln)["snippet_id"] in ids))
    assert outcomes.read_text(), "the sample's command is one of the recorded ones"
    out = root / "patched"
    r = cli("--docs", tree, "--snippets", snippets, "--outcomes", outcomes, "-o", out)
    assert r.returncode == 0, r.stderr
    return tree, out


def test_inside_tabs_and_admonitions_at_the_block_indentation(sample):
    tree, out = sample
    before = (tree / "docs" / "containers.md").read_text()
    after = (out / "docs" / "containers.md").read_text()
    assert after.count("!!! warning") == 3
    lines = after.split("\n")
    for n, ln in enumerate(lines):
        if ln.lstrip().startswith("<!-- driftmatrix:begin"):
            fence = next(lines[j] for j in range(n - 1, -1, -1) if lines[j].strip().startswith("```"))
            indent = re.match(r" *", fence).group(0)
            assert ln.startswith(indent + "<!--") and lines[n + 2].startswith(indent + "!!! warning")
    assert ann.strip(after) == before


def test_patched_pages_build_with_vllms_markdown_extensions(sample, corpus, tmp_path):
    """mkdocs with the markdown_extensions of vLLM's own mkdocs.yaml: each warning renders as
    an admonition right after its code block, inside the same tab or admonition."""
    _, out = sample
    extensions = vllm_markdown_extensions(corpus)
    (out / "mkdocs.yml").write_text(f"site_name: sample\ndocs_dir: docs\ntheme:\n  name: material\n  font: false\n{extensions}")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(out / "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    html = BeautifulSoup((tmp_path / "site" / "containers" / "index.html").read_text(), "html.parser")
    warnings = html.select("div.admonition.warning")
    assert len(warnings) == 3
    for w in warnings:
        code = w.find_previous_sibling()
        assert code is not None and "max-lora-cls-labels" in code.get_text()  # right after its block
        assert "Is rejected by the argument parser of vLLM 0.20.1" in w.select_one(".admonition-title").get_text()
    assert warnings[0].find_parent(class_="tabbed-block") is not None  # stayed inside its tab
    assert warnings[1].find_parent(class_="admonition") is not None  # inside the tip
    assert "Then send requests." in html.select_one(".tabbed-block").get_text()


def test_site_shows_the_annotated_pages(sample, site_inputs, tmp_path):
    """`publish --docs TREE`: the site's annotated-pages section lists each patched page and
    shows the warning as it renders, after the code block it follows, and the patch."""
    tree, _ = sample
    snippets = tree.parent / "snippets.json"
    outcomes = tree.parent / "outcomes.jsonl"
    r = subprocess.run([sys.executable, "-m", "driftmatrix.cli", "publish", "--snippets", str(snippets),
                        "--outcomes", str(outcomes), "--docs", str(tree), "--site-dir", str(tmp_path / "site")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    index = BeautifulSoup((tmp_path / "site" / "annotated" / "index.html").read_text(), "html.parser")
    links = index.select("table.dm-annotated a")
    assert [a.get_text() for a in links] == ["docs/containers.md"]
    shown = BeautifulSoup((tmp_path / "site" / "annotated" / links[0]["href"]).read_text(), "html.parser")
    assert len(shown.select("div.admonition.warning")) == 3
    assert "+!!! warning" in shown.get_text() or "+    !!! warning" in shown.get_text()


def test_corpus_warnings_render_after_their_blocks(docs_copy, site_inputs, corpus, tmp_path):
    """The patched corpus pages themselves, built with vLLM's Markdown extensions (not strict:
    their links point at pages outside this mini site): every inserted warning renders as an
    admonition whose previous element is the code block with its command."""
    results = load(site_inputs["snippets"], [site_inputs["parse"]])
    result = ann.annotate(results, docs_copy)
    mini = tmp_path / "mini"
    for p in result.patches:
        (mini / "docs" / p.file).parent.mkdir(parents=True, exist_ok=True)
        (mini / "docs" / p.file).write_text(p.after)
    extensions = vllm_markdown_extensions(corpus)
    (mini / "mkdocs.yml").write_text(f"site_name: mini\ndocs_dir: docs/docs\ntheme:\n  name: material\n  font: false\n{extensions}")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-f", str(mini / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for p in result.patches:
        html = BeautifulSoup((tmp_path / "site" / p.file.removeprefix("docs/").removesuffix(".md") / "index.html").read_text(),
                             "html.parser")
        shown = [a for a in html.select("div.admonition") if "vLLM 0.20.1" in a.get_text()]
        assert len(shown) == len(p.inserts), p.file
        for a, ins in zip(shown, p.inserts):
            first = next(ln for ln in ins.block.split("\n") if ln.strip()).strip()
            before = a.find_previous_sibling()
            while before is not None and "admonition" in (before.get("class") or []):
                before = before.find_previous_sibling()  # two commands in one block: two warnings after it
            assert first[:30] in before.get_text(), p.file


def test_a_warn_gets_a_note(site_inputs, tmp_path):
    """The H200 run's vLLM 0.21.0 outcomes alone: the 31B + assistant command WARNs there
    (falls back to text-only drafting), so its page gets a note, not a warning."""
    gpu = HERE.parent / "fixtures" / "gpu"
    only = tmp_path / "0.21.0.jsonl"
    only.write_text("".join(ln + "\n" for ln in (gpu / "outcomes-h200.jsonl").read_text().splitlines()
                            if ln.strip() and json.loads(ln)["target"]["version"] == "0.21.0"))
    repo = HERE.parent.parent
    results = load(repo / "benchmarks" / "gpu" / "snippets.json", [only])
    result = ann.annotate(results, repo / "benchmarks" / "gpu" / "docs")
    notes = [i for p in result.patches for i in p.inserts]
    assert notes and all(i.kind == "note" for i in notes)
    assert any(i.admonition.startswith('!!! note "Warns on vLLM 0.21.0"') and "text-only" in i.admonition for i in notes)
