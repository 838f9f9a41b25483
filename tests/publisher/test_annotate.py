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

from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

HERE = Path(__file__).resolve().parent


def vllm_markdown_extensions(corpus) -> str:
    """The `markdown_extensions:` section of vLLM's own mkdocs.yaml, verbatim (its `!!python`
    tags are for mkdocs' loader, so the text is reused rather than re-serialised)."""
    vllm_yaml = (corpus / "vllm-docs" / "0.33.0" / "mkdocs.yaml").read_text()
    return re.search(r"^markdown_extensions:\n(?:[ \-#].*\n|\n)+", vllm_yaml, re.M).group(0)


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "annotate", *map(str, args)], capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def docs_copy(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("docs") / "vllm-0.33.0"
    shutil.copytree(corpus / "vllm-docs" / "0.33.0", root)
    return root


def _text_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _drift_places(results) -> set[tuple[str, str, int]]:
    """(snippet id, file, line) of every Markdown place judged doc-drift."""
    judge = Judge(results)
    return {
        (s.id, src.file, src.line)
        for s in results.snippets
        for src in s.sources
        if src.file.endswith(".md") and judge.of_source(s, src).kind == "doc-drift"
    }


def test_pages_of_0_33_get_no_warning_from_older_builds(docs_copy, site_inputs, tmp_path):
    """The fixture's pages are vLLM 0.33.0 docs: written for 0.33.*. Their commands that fail on
    0.20.1 or 0.32.0 fail on builds older than the page's versions: not doc bugs, no warning. The
    only warnings are for what the shell runs: expert_parallel_deployment.md's `\\` + comment."""
    results = load(site_inputs["snippets"], [site_inputs["parse"]])
    assert any(o.verdict == "FAIL" for o in results.cells.values())
    drift, judge = _drift_places(results), Judge(results)
    assert drift and {file for _, file, _ in drift} == {"docs/serving/expert_parallel_deployment.md"}
    assert all(
        judge.of_source(s, src).decided_by == "shell"
        for s in results.snippets
        for src in s.sources
        if (s.id, src.file, src.line) in drift
    )
    r = cli(
        "--docs",
        docs_copy,
        "--snippets",
        site_inputs["snippets"],
        "--outcomes",
        site_inputs["parse"],
        "--patch",
        tmp_path / "p.diff",
    )
    assert r.returncode == 0, r.stderr
    assert f"{len(drift)} admonition(s) inserted" in r.stdout
    patched = set(re.findall(r"^\+\+\+ b/(\S+)", (tmp_path / "p.diff").read_text(), re.M))
    assert patched == {"docs/serving/expert_parallel_deployment.md"}


def test_corpus_pages_idempotent_and_otherwise_identical(docs_copy, corpus, site_inputs, stable_plus, tmp_path):
    """The same pages read as written for 0.20.1 and newer: a warning after every command that
    fails on a build in that range, and nothing else changes."""
    original = _text_files(corpus / "vllm-docs" / "0.33.0")
    once = tmp_path / "once"
    r = cli("--docs", docs_copy, "--snippets", stable_plus, "--outcomes", site_inputs["parse"], "-o", once)
    assert r.returncode == 0, r.stderr
    patched = _text_files(once)
    changed = sorted(k for k in patched if patched[k] != original.get(k))
    assert changed and set(patched) == set(original)
    inserted = set()
    for rel in changed:
        before, after = original[rel].decode(), patched[rel].decode()
        assert ann.strip(after) == before  # remove the inserted blocks: byte-identical again
        diff = [ln for ln in __import__("difflib").ndiff(before.split("\n"), after.split("\n")) if ln[:1] in "+-"]
        assert all(ln.startswith("+ ") for ln in diff), rel  # only insertions
        inserted |= {(sid, rel) for sid in re.findall(r"<!-- driftmatrix:begin (\S+) -->", after)}
    drift = _drift_places(load(stable_plus, [site_inputs["parse"]]))
    assert inserted == {(sid, f) for sid, f, _ in drift} and drift

    again = tmp_path / "again.patch"
    r = cli("--docs", once, "--snippets", stable_plus, "--outcomes", site_inputs["parse"], "--patch", again)
    assert r.returncode == 0 and again.read_text() == ""  # nothing to change the second time

    # A later run where every command checked runs (the nightly's PASSes): every warning goes, but
    # those for what the shell runs (expert_parallel_deployment.md's `\\` + comment): no build decides those.
    passing = tmp_path / "passing.jsonl"
    passing.write_text(
        "".join(
            ln + "\n"
            for ln in site_inputs["parse"].read_text().splitlines()
            if ln.strip() and json.loads(ln)["target"]["name"] == "nightly" and json.loads(ln)["verdict"] == "PASS"
        )
    )
    fixed = tmp_path / "fixed"
    r = cli("--docs", once, "--snippets", stable_plus, "--outcomes", passing, "-o", fixed)
    assert r.returncode == 0, r.stderr
    after = _text_files(fixed)
    still = {k for k in after if after[k] != original[k]}
    assert still == {"docs/serving/expert_parallel_deployment.md"}
    kept = set(re.findall(r"<!-- driftmatrix:begin (\S+) -->", after[still.pop()].decode()))
    shell = {
        s.id
        for s in load(stable_plus, [passing]).snippets
        if any(lint.code == "backslash-not-continuation" for lint in s.lints)
    }
    assert kept == shell and kept


def test_warning_says_what_fails_where_and_how_deep_it_runs(docs_copy, site_inputs, stable_plus):
    results = load(stable_plus, [site_inputs["parse"]])
    result = ann.annotate(results, docs_copy)
    inserts = [i for p in result.patches for i in p.inserts]
    assert inserts
    shell = {s.id for s in results.snippets if any(lint.code == "backslash-not-continuation" for lint in s.lints)}
    assert shell <= {i.snippet_id for i in inserts}
    for i in inserts:
        if i.snippet_id in shell:  # what the shell runs, whatever the builds say: the line where it ends it
            assert re.match(
                r'!!! warning "Does not run as written: the shell ends the command on line \d+"', i.admonition
            )
            assert "is followed by a comment, so bash does not continue" in i.admonition
            continue
        o = {c.name: results.cell(i.snippet_id, c) for c in results.columns}
        failing = [c.version for c in results.columns if o[c.name].verdict == "FAIL"]
        assert i.kind == "warning" and failing
        assert i.admonition.startswith(f'!!! warning "Is rejected by the argument parser of vLLM {failing[0]}')
        assert o["stable" if o["stable"].verdict == "FAIL" else "nightly"].evidence.exception.type in i.admonition
        assert "The page is written for vLLM `>=0.20.1`: set on the command line" in i.admonition
        if o["nightly"].verdict == "PASS":  # parse-only evidence is worded as such, never "works"
            assert "vLLM 0.32.0 accepts its arguments (parser only, not started)." in i.admonition
        assert "Works on" not in i.admonition


@pytest.fixture(scope="module")
def sample(site_inputs, tmp_path_factory):
    """The sample page (tests/publisher/sample-docs), extracted by the real extractor: the same
    command as a real corpus page, so the real outcomes of that command apply."""
    root = tmp_path_factory.mktemp("sample")
    tree = root / "sample-docs"
    shutil.copytree(HERE / "sample-docs", tree)
    snippets = root / "snippets.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "extract",
            str(tree),
            "-q",
            "--stable",
            stable_pin(SEED_CPU),
            "-o",
            str(snippets),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    outcomes = root / "outcomes.jsonl"
    ids = {s["id"] for s in json.loads(snippets.read_text())["snippets"]}
    outcomes.write_text(
        "".join(
            ln + "\n"
            for ln in site_inputs["parse"].read_text().splitlines()
            if ln.strip() and json.loads(ln)["snippet_id"] in ids
        )
    )
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
    (out / "mkdocs.yml").write_text(
        f"site_name: sample\ndocs_dir: docs\ntheme:\n  name: material\n  font: false\n{extensions}"
    )
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(out / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
    )
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
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "publish",
            "--snippets",
            str(snippets),
            "--outcomes",
            str(outcomes),
            "--docs",
            str(tree),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    index = BeautifulSoup((tmp_path / "site" / "annotated" / "index.html").read_text(), "html.parser")
    links = index.select("table.dm-annotated a")
    assert [a.get_text() for a in links] == ["docs/containers.md"]
    shown = BeautifulSoup((tmp_path / "site" / "annotated" / links[0]["href"]).read_text(), "html.parser")
    assert len(shown.select("div.admonition.warning")) == 3
    assert "+!!! warning" in shown.get_text() or "+    !!! warning" in shown.get_text()


def test_corpus_warnings_render_after_their_blocks(docs_copy, site_inputs, stable_plus, corpus, tmp_path):
    """The patched corpus pages themselves, built with vLLM's Markdown extensions (not strict:
    their links point at pages outside this mini site): every inserted warning renders as an
    admonition whose previous element is the code block with its command."""
    results = load(stable_plus, [site_inputs["parse"]])
    result = ann.annotate(results, docs_copy)
    mini = tmp_path / "mini"
    for p in result.patches:
        (mini / "docs" / p.file).parent.mkdir(parents=True, exist_ok=True)
        (mini / "docs" / p.file).write_text(p.after)
    extensions = vllm_markdown_extensions(corpus)
    (mini / "mkdocs.yml").write_text(
        f"site_name: mini\ndocs_dir: docs/docs\ntheme:\n  name: material\n  font: false\n{extensions}"
    )
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(mini / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    for p in result.patches:
        html = BeautifulSoup(
            (tmp_path / "site" / p.file.removeprefix("docs/").removesuffix(".md") / "index.html").read_text(),
            "html.parser",
        )
        shown = [a for a in html.select("div.admonition") if "driftmatrix" in a.get_text()]
        assert len(shown) == len(p.inserts), p.file
        for a, ins in zip(shown, p.inserts):
            first = next(ln for ln in ins.block.split("\n") if ln.strip()).strip()
            before = a.find_previous_sibling()
            while before is not None and "admonition" in (before.get("class") or []):
                before = before.find_previous_sibling()  # two commands in one block: two warnings after it
            assert first[:30] in before.get_text(), p.file


def test_the_seed_case_on_the_h200_records(tmp_path):
    """The Gemma 4 doc issue on CUDA (tests/fixtures/gpu): the page states no version, so it is
    written for the stable release of the time (0.20.1) and newer. The assistant commands fail at
    start (or config, the `mtp` form) on 0.20.1: doc-drift, a warning each, saying 0.21.0 starts
    them. Judged on the 0.21.0 build alone, where they warn and proceed: ok, no warning."""
    gpu = HERE.parent / "fixtures" / "gpu"
    repo = HERE.parent.parent
    snippets = repo / "benchmarks" / "gpu" / "snippets.json"
    results = load(snippets, [gpu / "outcomes-h200.jsonl"])
    result = ann.annotate(results, repo / "benchmarks" / "gpu" / "docs")
    inserts = {i.snippet_id: i for p in result.patches for i in p.inserts}
    assert set(inserts) == {"s-9ac554db7c65", "s-7dda23655a43", "s-e731a0b09d3a"}
    assert inserts["s-9ac554db7c65"].admonition.startswith('!!! warning "Does not start on vLLM 0.20.1"')
    assert "does not support multimodal models yet" in inserts["s-9ac554db7c65"].admonition
    assert "It starts on vLLM 0.21.0 and answers requests, with a warning" in inserts["s-9ac554db7c65"].admonition
    assert inserts["s-e731a0b09d3a"].admonition.startswith(
        '!!! warning "Is rejected by the engine config of vLLM 0.20.1"'
    )
    only = tmp_path / "0.21.0.jsonl"
    only.write_text(
        "".join(
            ln + "\n"
            for ln in (gpu / "outcomes-h200.jsonl").read_text().splitlines()
            if ln.strip() and json.loads(ln)["target"]["version"] == "0.21.0"
        )
    )
    later = load(snippets, [only])
    assert ann.annotate(later, repo / "benchmarks" / "gpu" / "docs").patches == []
    judge = Judge(later)
    j = judge.of(next(s for s in later.snippets if s.id == "s-9ac554db7c65"))
    assert j.kind == "ok" and "with a warning" in j.summary


def test_symlinks_are_neither_read_nor_written_through(site_inputs, tmp_path):
    """A docs tree is untrusted: `docs/evil.md -> OUTSIDE/page.md` and `docs/sub -> OUTSIDE` are
    not read (reported), even when the snippets name them, and no patch is written through a link
    (`docs/twin.md -> TREE/docs/containers.md`: an absolute link that the `-o` copy keeps)."""
    import uuid

    canary = f"canary-{uuid.uuid4().hex}"
    outside = tmp_path / "outside"
    outside.mkdir()
    command = "vllm serve model --enable-lora --max-lora-cls-labels 8"
    page = (
        f"# {canary}\n\n<!-- driftmatrix:begin s-old -->\n{canary}\n<!-- driftmatrix:end s-old -->\n\n"
        f"```bash\n{command}\n```\n"
    )
    (outside / "page.md").write_text(page)
    tree = tmp_path / "sample-docs"
    shutil.copytree(HERE / "sample-docs", tree)
    (tree / "docs" / "evil.md").symlink_to(outside / "page.md")
    (tree / "docs" / "sub").symlink_to(outside)
    (tree / "docs" / "twin.md").symlink_to(tree / "docs" / "containers.md")
    original = (tree / "docs" / "containers.md").read_bytes()
    snippets = tmp_path / "snippets.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "extract",
            str(tree),
            "-q",
            "--stable",
            stable_pin(SEED_CPU),
            "-o",
            str(snippets),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(snippets.read_text())
    for s in data["snippets"]:  # snippets naming the linked pages (an older extraction's, say)
        s["sources"] += [
            {**src, "file": f"docs/{name}.md", "line": line}
            for src in s["sources"][:1]
            for name, line in (("evil", 8), ("twin", src["line"]))
        ]
    snippets.write_text(json.dumps(data))
    ids = {s["id"] for s in data["snippets"]}
    outcomes = tmp_path / "outcomes.jsonl"
    outcomes.write_text(
        "".join(
            ln + "\n"
            for ln in site_inputs["parse"].read_text().splitlines()
            if ln.strip() and json.loads(ln)["snippet_id"] in ids
        )
    )
    out, patch = tmp_path / "patched", tmp_path / "annotate.patch"
    said = ""
    for where in (("--patch", patch), ("-o", out)):
        r = cli("--docs", tree, "--snippets", snippets, "--outcomes", outcomes, *where)
        assert r.returncode == 0, r.stderr
        said += r.stdout + r.stderr
    assert canary not in said + patch.read_text()
    assert not [p for p in out.rglob("*") if p.is_file() and not p.is_symlink() and canary in p.read_text()]
    assert (outside / "page.md").read_text() == page and (tree / "docs" / "containers.md").read_bytes() == original
    assert "docs/evil.md: leads out of the tree" in said and "docs/sub: leads out of the tree" in said
    assert "docs/twin.md: is a symbolic link inside the tree" in said
    assert (out / "docs" / "containers.md").read_text().count("!!! warning") == 3
