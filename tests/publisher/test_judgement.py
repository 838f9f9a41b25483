"""One judgement, everywhere: on every command of the 0.33.0 site fixtures the site (matrix,
command pages), matrix.json, `annotate` and the `pr` body say the same — for the pages as
extracted (vLLM 0.33.0 docs: written for 0.33.*, no checked build is: only what the shell runs
judges, the `\\` followed by a comment of expert_parallel_deployment.md) and read as written for
0.20.1 and newer (where the 0.20.1 and 0.32.0 runs judge them)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
from bs4 import BeautifulSoup

from driftmatrix.publisher.judgement import Judge
from driftmatrix.publisher.results import load


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "driftmatrix.cli", *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def docs(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("judged-docs") / "vllm-0.33.0"
    shutil.copytree(corpus / "vllm-docs" / "0.33.0" / "docs", root / "docs")
    shutil.copy(corpus / "vllm-docs" / "0.33.0" / "mkdocs.yaml", root / "mkdocs.yaml")
    return root


@pytest.fixture(scope="module", params=["as-extracted", "as-written-for-0.20.1-and-newer"])
def judged(request, site_inputs, stable_plus, docs, tmp_path_factory):
    snippets = site_inputs["snippets"] if request.param == "as-extracted" else stable_plus
    outcomes = [site_inputs["parse"], site_inputs["config"]]
    root = tmp_path_factory.mktemp("judged")
    site = _cli("publish", "--snippets", snippets, "--outcomes", *outcomes, "--site-dir", root / "site")
    assert site.returncode == 0, site.stderr
    annotated = _cli(
        "annotate", "--docs", docs, "--snippets", snippets, "--outcomes", *outcomes, "-o", root / "patched"
    )
    assert annotated.returncode == 0, annotated.stderr
    pr = _cli("pr", "--repo", "vllm-project/vllm", "--checkout", docs, "--snippets", snippets, "--outcomes", *outcomes)
    assert pr.returncode == 0, pr.stderr
    results = load(snippets, outcomes)
    return request.param, results, Judge(results), root, pr.stdout


def test_matrix_json_and_the_pages_say_the_judgement(judged):
    _, results, judge, root, _ = judged
    doc = json.loads((root / "site" / "matrix.json").read_text())
    data = (root / "site" / "matrix-data.js").read_text()  # what the matrix page draws
    data = json.loads(data.removeprefix("window.DM_MATRIX = ").rstrip().removesuffix(";"))
    rows = {row[0]: data["judgements"][row[5]] for group in data["groups"] for row in group[3]}
    for s in results.snippets:
        entry = doc["snippets"][s.id]
        assert entry["judgement"] == judge.of(s).kind
        assert [x["judgement"] for x in entry["sources"]] == [judge.of_source(s, src).kind for src in s.sources]
        assert rows[s.id] == judge.of_source(s, s.sources[0]).kind  # grouped under its first page
        for cell in entry["support"].values():
            assert cell["depth"]  # how deep every verdict went
        page = BeautifulSoup((root / "site" / "snippets" / f"{s.id}.html").read_text(), "html.parser")
        shown = {span.get_text() for span in page.select("table.dm-judgements .dm-j")}
        assert shown == {j.kind for j in judge.all(s)}


def test_annotate_and_the_pr_body_warn_exactly_for_doc_drift(judged, docs):
    reading, results, judge, root, body = judged
    drift = {
        (s.id, src.file)
        for s in results.snippets
        for src in s.sources
        if src.file.endswith(".md") and (docs / src.file).is_file() and judge.of_source(s, src).kind == "doc-drift"
    }
    inserted = set()
    for page in (root / "patched" / "docs").rglob("*.md"):
        rel = page.relative_to(root / "patched").as_posix()
        inserted |= {(sid, rel) for sid in re.findall(r"<!-- driftmatrix:begin (\S+) -->", page.read_text())}
    assert inserted == drift
    rows = {m for m in re.findall(r"^\| `([a-z]-[0-9a-f]{12})` \|", body, re.M)}
    assert rows == {sid for sid, _ in drift}
    doc = json.loads((root / "site" / "matrix.json").read_text())
    assert {sid for sid, e in doc["snippets"].items() if e["judgement"] == "doc-drift"} >= rows
    regressions = set(re.findall(r"^Command \(`([a-z]-[0-9a-f]{12})`", body, re.M))
    assert regressions == {
        s.id
        for s in results.snippets
        if judge.of(s).kind == "vllm-regression" and any((docs / src.file).is_file() for src in s.sources)
    }
    shell = {
        (s.id, src.file)
        for s in results.snippets
        for src in s.sources
        if src.file.endswith(".md") and judge.of_source(s, src).decided_by == "shell"
    }
    assert shell and {src for _, src in shell} == {"docs/serving/expert_parallel_deployment.md"}  # `\` + comment
    if reading == "as-extracted":  # 0.33.0 docs, checked on 0.20.1 and 0.32.0 only: the shell's reading alone
        assert drift == shell and f"{len(shell)} warning(s)" in body
    else:
        assert drift and all(j.kind != "needs-newer" for s in results.snippets for j in judge.all(s))
