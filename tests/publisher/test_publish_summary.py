"""Issue 31, point 6: the publish job's step summary links every new doc-drift to a page the built
site really has (`use_directory_urls: false`: `snippets/<id>.html`, not `snippets/<id>/`), and stays
under GitHub's 1 MiB per step however long the docs' page names are, naming where the full report is."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types

import mdcheck

from driftmatrix.common.inert import STEP_SUMMARY_CAP
from driftmatrix.common.step_summary import write
from driftmatrix.publish_cli import PUBLISH_FULL, publish_summary

SITE_URL = "https://example.test/dm"


def test_every_new_doc_drift_link_is_a_page_of_the_built_site(site_inputs, stable_plus, tmp_path):
    """`driftmatrix publish` as the workflow runs it (a first publish: all doc-drift is new), into a
    real mkdocs build; each link of the summary, taken back to a path under the site, is a file."""
    summary = tmp_path / "summary.md"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "driftmatrix.cli",
            "publish",
            "--snippets",
            str(stable_plus),
            "--outcomes",
            str(site_inputs["parse"]),
            str(site_inputs["config"]),
            "--site-dir",
            str(tmp_path / "site"),
            "--site-url",
            SITE_URL,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert out.returncode == 0, out.stderr
    text = summary.read_text()
    new = int(re.search(r"\*\*New doc-drift: (\d+)\*\*", text).group(1))
    assert new > 0, text  # else the fixture no longer tests the links
    links = mdcheck.assert_inert(text, allowed_links=(SITE_URL + "/",)).links
    drift = [u for u in links if "/snippets/" in u]
    assert len(drift) == min(new, 25)
    for url in links:
        assert url.startswith(SITE_URL + "/"), url
        rel = url[len(SITE_URL) + 1 :] or "index.html"
        assert (tmp_path / "site" / rel).is_file(), f"{url}: no such page in the built site"


def test_the_publish_summary_is_capped_with_oversized_page_names(tmp_path):
    """30 new doc-drift whose page names are 1 MB each (25 MB as written): the summary stays far under
    the cap, each place cut, and says where the rest is."""
    page = "docs/" + "p" * 1_000_000 + ".md"
    entries = {f"s-{n:012x}": {"judgement": "doc-drift", "sources": [{"file": page, "line": n}]} for n in range(30)}
    done = types.SimpleNamespace(matrix={"snippets": entries}, previous=None, changes=[], judged=lambda: "30 doc-drift")
    summary = tmp_path / "summary.md"
    assert write(publish_summary(done, SITE_URL), summary, PUBLISH_FULL)
    text = summary.read_text()
    assert len(text.encode()) < 100_000 <= STEP_SUMMARY_CAP
    assert f"… and 5 more: {PUBLISH_FULL}" in text
    mdcheck.assert_inert(
        text, allowed_links=tuple(f"{SITE_URL}/snippets/{sid}.html" for sid in entries) + (SITE_URL + "/",)
    )
