"""`driftmatrix publish` on outcomes recorded from real runner runs: the site builds with
`mkdocs build --strict`, every page the issue names is there with the right content, and
matrix.json and the history say what the records say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from driftmatrix.publisher.results import load
from driftmatrix.runner.outcomes.vocabulary import JUDGEMENTS

HERE_REPO = Path(__file__).resolve().parents[2]


def publish(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "publish", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture(scope="module")
def published(site_inputs, tmp_path_factory):
    """Two publishes with a history folder: the parse run, then the parse + config runs."""
    root = tmp_path_factory.mktemp("publish")
    hist = root / "history"
    first = publish(
        "--snippets",
        site_inputs["snippets"],
        "--outcomes",
        site_inputs["parse"],
        "--run-history",
        hist,
        "--site-dir",
        root / "site1",
    )
    second = publish(
        "--snippets",
        site_inputs["snippets"],
        "--outcomes",
        site_inputs["parse"],
        site_inputs["config"],
        "--run-history",
        hist,
        "--site-dir",
        root / "site2",
    )
    return root, first, second


def page(path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_builds_strict_with_every_page(published, site_inputs):
    root, first, second = published
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    site = root / "site2"
    results = load(site_inputs["snippets"], [site_inputs["parse"], site_inputs["config"]])
    for name in (
        "index.html",
        "matrix.html",
        "pages/index.html",
        "annotated/index.html",
        "matrix-json.html",
        "matrix.json",
    ):
        assert (site / name).is_file(), name
    for s in results.snippets:
        assert (site / "snippets" / f"{s.id}.html").is_file()
    assert (site / "matrix.html").stat().st_size < 3_000_000


def test_the_guide_is_published_and_linked_from_the_pages_that_explain(published, site_inputs):
    """docs/guide/ is built into every site, in its navigation, and the generated pages link into it
    where they explain a judgement, a depth or the matrix (the links resolve: the build is strict)."""
    site = published[0] / "site2"
    guide = sorted((HERE_REPO / "docs" / "guide").glob("*.md"))
    for md in guide:
        assert (site / "guide" / f"{md.stem}.html").is_file(), md.name
    nav = {a["href"] for a in page(site / "index.html").select("nav a[href]")}
    assert {f"guide/{md.stem}.html" for md in guide} <= nav
    results = load(site_inputs["snippets"], [site_inputs["parse"], site_inputs["config"]])
    into_guide = {
        name: {a["href"] for a in page(site / name).select("article a[href*='guide/']")}
        for name in (
            "index.html",
            "matrix.html",
            "pages/index.html",
            "annotated/index.html",
            "matrix-json.html",
            f"snippets/{results.snippets[0].id}.html",
        )
    }
    assert "guide/judgements.html#judgements" in into_guide["index.html"]
    assert "guide/reading-the-matrix.html#the-matrix" in into_guide["matrix.html"]
    assert "../guide/judgements.html#judgements" in into_guide[f"snippets/{results.snippets[0].id}.html"]
    assert all(into_guide.values()), into_guide


def test_matrix_json_says_what_the_records_say(published, site_inputs):
    root, _, _ = published
    doc = json.loads((root / "site2" / "matrix.json").read_text())
    assert doc["schema"] == 1 and len(doc["targets"]) == 2
    results = load(site_inputs["snippets"], [site_inputs["parse"], site_inputs["config"]])
    first_run = load(site_inputs["snippets"], [site_inputs["parse"]])
    versions = {c.key: c.version for c in results.columns}
    old, new = results.columns
    checked = 0
    for s in results.snippets:
        entry = doc["snippets"][s.id]
        for c in results.columns:
            o = results.cell(s.id, c)
            if o is None:
                assert c.key not in entry["support"]
                continue
            cell = entry["support"][c.key]
            assert cell["status"] == o.verdict and cell["stage"] == o.stage
            assert (root / "site2" / cell["evidence"].split("#")[0]).is_file()
            if o.verdict == "FAIL":
                assert cell["notes"] and ".py:" in cell["notes"][0]  # the raising file:line
        a, b = results.cell(s.id, old), results.cell(s.id, new)
        assert entry["command"].startswith(s.sources[0].text.strip()[:20]) and entry["judgement"] in JUDGEMENTS
        if a and b and a.verdict == "FAIL" and b.verdict in ("PASS", "WARN"):  # same kind of build, both run
            assert entry["support"][old.key]["range"]["text"] == f"{new.version}+"  # where it did work
            assert entry["support"][new.key]["range"] == {
                "first": new.version,
                "last": None,
                "basis": "runs",
                "text": f"{new.version}+",
            }
        if a and b and a.verdict in ("PASS", "WARN") and b.verdict in ("PASS", "WARN"):
            assert entry["support"][new.key]["range"]["text"] == f"{old.version}+"
        if entry["judgement"] != "unknown":  # a stage, or what decided it when no build did
            assert entry["depth"] in ("parse", "config", "start", "probe", "perf") or entry["depth"] in {
                j["decided_by"] for j in entry["judgements"]
            } - {"builds"}
        earlier = first_run.cell(s.id, old)  # the history: the first publish saw the parse run only
        if earlier and earlier.verdict in ("PASS", "WARN"):
            assert entry["version_added"] == old.version  # seen passing then, whatever it does now
            continue
        if a and b and a.verdict == "FAIL" and b.verdict in ("PASS", "WARN"):
            assert entry["version_added"] == new.version and entry["version_removed"] is None
            checked += 1
        if a and b and a.verdict == "PASS" and b.verdict == "PASS":
            assert entry["version_added"] == old.version and entry["last_passing"]["version"] == new.version
    assert checked, "the fixture has commands that fail on the old version and run on the new one"
    assert set(versions.values()) == {t["version"] for t in doc["targets"].values()}
    assert {t["label"] for t in doc["targets"].values()} == {
        "stable (vLLM 0.20.1, CPU build)",
        "nightly (vLLM 0.32.0, CPU build)",
    }
    assert {t["kind"] for t in doc["targets"].values()} == {"CPU build"}


def test_history_shows_what_changed(published, site_inputs):
    root, _, second = published
    snapshots = sorted((root / "history").glob("matrix-*.json"))
    assert len(snapshots) == 2
    before = json.loads(snapshots[0].read_text())
    after = json.loads((root / "site2" / "matrix.json").read_text())
    expected = set()
    for sid, entry in after["snippets"].items():
        for key, cell in entry["support"].items():
            old = before["snippets"][sid]["support"].get(key)
            if old and old["status"] != cell["status"]:
                expected.add(sid)
    assert expected, "the config run changed some verdicts"
    overview = page(root / "site2" / "index.html")
    table = overview.select_one("table.dm-changes")
    assert table is not None
    linked = {a["href"].split("/")[-1].removesuffix(".html") for a in table.select("a[href]")}
    assert linked == expected
    # Same builds, the second run one tier deeper: what it found is "newly found", never "regressed"
    kinds = {tr.select("td")[-1].get_text() for tr in table.select("tbody tr")}
    assert "newly found" in kinds and "regressed" not in kinds and "fixed" not in kinds
    first_overview = page(root / "site1" / "index.html")
    assert "No earlier run" in first_overview.get_text() or "No verdict changed" in first_overview.get_text()


def test_snippet_page_carries_the_evidence(published, site_inputs):
    root, _, _ = published
    results = load(site_inputs["snippets"], [site_inputs["parse"], site_inputs["config"]])
    fails = [
        (s, c, results.cell(s.id, c))
        for s in results.snippets
        for c in results.columns
        if results.cell(s.id, c) and results.cell(s.id, c).verdict == "FAIL"
    ]
    assert fails
    s, c, o = fails[0]
    doc = page(root / "site2" / "snippets" / f"{s.id}.html")
    section = doc.find(id=c.key)
    assert section is not None
    facts = section.find_next("table", class_="dm-facts").get_text(" ")
    assert o.evidence.exception.type in facts and f":{o.evidence.exception.location.line}" in facts
    assert s.sources[0].file in doc.select_one("ul.dm-sources").get_text()
    code = doc.select_one("div.highlight code, pre code")
    assert code is not None and "vllm" in code.get_text()
    assert doc.find(string=lambda t: t and "seen passing" in t)


def test_doc_pages_list_their_commands_in_order(published, site_inputs):
    root, _, _ = published
    results = load(site_inputs["snippets"], [site_inputs["parse"]])
    index = page(root / "site2" / "pages" / "index.html")
    rows = index.select("table.dm-pages tbody tr")
    files = {src.file for s in results.snippets for src in s.sources}
    assert len(rows) == len(files)
    # the judgements' heads are the second header row, their cells after the page's and its versions'
    heads = [th.get_text() for th in index.select("table.dm-pages thead tr")[1].select("th")]
    drift = [int(r.select("td")[2 + heads.index("doc-drift")].get_text()) for r in rows]
    assert drift[0] > 0  # expert_parallel_deployment.md: what the shell runs
    assert drift == sorted(drift, reverse=True)  # pages with doc-drift first
    assert {r.select("td")[1].get_text() for r in rows} == {"==0.33.*"}  # what each page is written for
    first = root / "site2" / "pages" / rows[0].select_one("a")["href"]
    lines = [int(tr.select("td")[0].get_text()) for tr in page(first).select("table.dm-page tbody tr")]
    assert lines == sorted(lines) and lines


def test_bad_inputs_are_named_and_nothing_is_lost(site_inputs, tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_text(site_inputs["parse"].read_text() + '{"snippet_id": "s-x", "target": \n')
    r = publish(
        "--snippets",
        site_inputs["snippets"],
        "--outcomes",
        broken,
        tmp_path / "missing.jsonl",
        "--site-dir",
        tmp_path / "site",
    )
    assert r.returncode == 0, r.stderr
    assert "unreadable outcome line" in r.stderr and "missing.jsonl: no such file" in r.stderr
    overview = page(tmp_path / "site" / "index.html").get_text()
    assert "missing.jsonl" in overview
    bad = tmp_path / "bad.json"
    bad.write_text("[")
    r = publish("--snippets", bad, "--outcomes", broken, "--site-dir", tmp_path / "site2")
    assert r.returncode == 2 and "not a readable snippets.json" in r.stderr


def test_the_seed_case_on_the_h200_site(tmp_path):
    """The H200 records published: the Gemma 4 page states no vLLM version, so it is judged from
    the stable release of the time (0.20.1) on. The assistant commands are doc-drift (FAIL at
    start on 0.20.1, WARN on 0.21.0, both shown); Gemma 4 alone is ok, started and probed."""
    repo = HERE_REPO
    gpu = repo / "tests" / "fixtures" / "gpu"
    r = publish(
        "--snippets",
        repo / "benchmarks" / "gpu" / "snippets.json",
        "--outcomes",
        gpu / "outcomes-h200.jsonl",
        gpu / "outcomes-h200-perf.jsonl",
        "--site-dir",
        tmp_path / "site",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "site" / "matrix.json").read_text())
    judged = {sid: e["judgement"] for sid, e in doc["snippets"].items()}
    assert judged["s-9ac554db7c65"] == judged["s-7dda23655a43"] == judged["s-e731a0b09d3a"] == "doc-drift"
    assert judged["s-0d08c55297cd"] == "ok"
    entry = doc["snippets"]["s-9ac554db7c65"]
    (j,) = entry["judgements"]
    assert (j["written_for"], j["basis"], j["works_from"], j["depth"]) == (">=0.20.1", "default", "0.21.0", "start")
    by_version = {doc["targets"][k]["version"]: c for k, c in entry["support"].items()}
    assert by_version["0.20.1"]["status"] == "FAIL" and by_version["0.21.0"]["status"] == "WARN"
    assert by_version["0.21.0"]["depth"] == "server started, requests answered (with a warning)"
    assert doc["snippets"]["s-0d08c55297cd"]["judgements"][0]["depth"] == "probe"
    shown = page(tmp_path / "site" / "snippets" / "s-9ac554db7c65.html")
    assert shown.select_one("table.dm-judgements .dm-j").get_text() == "doc-drift"
    # which evidence spoke (issue 58): the build whose FAIL made it doc-drift, and how far it went
    assert j["evidence"] == "the builds: vLLM 0.20.1 at start"
    assert shown.select_one("table.dm-judgements td[data-label='Decided by']").get_text() == j["evidence"]
    assert "with a warning" in shown.select_one("table.dm-judgements").get_text()
    overview = page(tmp_path / "site" / "index.html")
    assert "docs/index.md" in overview.select_one("table.dm-offenders").get_text()


def test_a_day_whose_state_was_not_saved_says_so_on_the_front_page(published, site_inputs, tmp_path):
    """`--state-unsaved NOTE` (the workflow passes the note `state save --unsaved-note` left when the save
    was refused or failed): the front page says the state was not saved that day and why, every word of
    the note escaped (it holds git's words); a site without a note says nothing of the kind."""
    root, _, second = published
    assert second.returncode == 0
    assert page(root / "site2" / "index.html").select_one(".dm-unsaved") is None
    note = tmp_path / "state-unsaved.json"
    why = (
        "driftmatrix-state moved since this run loaded it (1a2b -> 3c4d) <script>alert(1)</script> "
        "[x](javascript:alert(2)) <img src=x onerror=alert(3)> in /tmp/tmpabc123/clone"
    )
    note.write_text(json.dumps({"date": "2026-12-08<b>", "run": "202", "why": why}))
    r = publish(
        "--snippets",
        site_inputs["snippets"],
        "--outcomes",
        site_inputs["parse"],
        "--site-dir",
        tmp_path / "site",
        "--state-unsaved",
        note,
    )
    assert r.returncode == 0, r.stderr
    front = page(tmp_path / "site" / "index.html")
    line = front.select_one(".dm-unsaved")
    text = " ".join(line.get_text().split())
    assert text.startswith("The state was not saved on 2026-12-08<b> (run 202): driftmatrix-state moved since")
    assert "<script>alert(1)</script>" in text and "<img src=x onerror=alert(3)>" in text  # shown, as text
    assert not line.find_all(["script", "img", "a", "b"]) and not front.select("a[href^=javascript]")
    assert "/tmp/tmpabc123" not in text  # no host path
    # a note that is not the JSON `state save` writes is shown as its text; the site is built all the same
    note.write_text("push refused <i>")
    r = publish(
        "--snippets",
        site_inputs["snippets"],
        "--outcomes",
        site_inputs["parse"],
        "--site-dir",
        tmp_path / "site-b",
        "--state-unsaved",
        note,
    )
    assert r.returncode == 0, r.stderr
    line = page(tmp_path / "site-b" / "index.html").select_one(".dm-unsaved")
    assert "push refused <i>" in line.get_text() and not line.find_all("i")
