"""`driftmatrix publish`: merge the records, generate the pages into a copy of the mkdocs
project at the repository root (mkdocs.yml + docs/), build it with `mkdocs build --strict`,
and put matrix.json next to it (and into the history folder). Every page, matrix.json and the
annotated docs are rendered from one set of command views (publisher/command_view.py), built
from `public.public_results(results)`: no host path reaches the site."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.common.inert import json_text, strip_controls
from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher import matrix_json, pages, public, run_history, search_index
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.results import Results
from driftmatrix.runner.outcomes.vocabulary import JUDGEMENTS

PACKAGED = Path(__file__).resolve().parent / "site_skeleton"
"""Where a wheel carries the site skeleton (setup.py copies the repository's mkdocs.yml + docs/)."""
SOURCE = Path(__file__).resolve().parents[1]
"""A source checkout or an editable install: the repository root."""


def skeleton() -> Path:
    """The mkdocs project the site is built from (mkdocs.yml + docs/)."""
    for root in (PACKAGED, SOURCE):
        if (root / "mkdocs.yml").is_file() and (root / "docs").is_dir():
            return root
    raise PublishError(
        f"the site skeleton (mkdocs.yml + docs/) is in neither {PACKAGED} (an installed wheel) nor "
        f"{SOURCE} (a source checkout): reinstall driftmatrix from a wheel or a checkout"
    )


class PublishError(Exception):
    """The site could not be built (the mkdocs output says why)."""


@dataclass
class Published:
    site_dir: Path
    pages: int
    matrix: dict
    changes: list = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    previous: dict | None = None
    """The previous run's matrix.json (None on a first publish)."""

    def judged(self) -> str:
        """`0 doc-drift, 0 vllm-regression, 17 needs-newer, 0 ok, 58 unknown`: one line for a console."""
        kinds = [e["judgement"] for e in self.matrix.get("snippets", {}).values()]
        return ", ".join(f"{kinds.count(k)} {k}" for k in JUDGEMENTS)


def build_site(
    results: Results,
    site_dir: Path,
    *,
    history_dir: Path | None = None,
    docs: list[Path] | None = None,
    annotated: dict | None = None,
    project: Path | None = None,
    unsaved: dict | None = None,
    keep_snapshots: int = run_history.DEFAULT_KEEP_SNAPSHOTS,
) -> Published:
    """The site from `results`; `docs`: docs trees to annotate too (their patched pages are shown);
    `annotated`: what `annotate.for_site` made of annotations done elsewhere (instead of `docs`);
    `unsaved`: this run's state was not saved (`state save --unsaved-note`: date, run, why), said on
    the front page; `keep_snapshots`: full matrix.json documents kept in `history_dir` (every run keeps
    its summary)."""
    t0 = time.monotonic()
    project = project or skeleton()
    past, commands = _commands(results, history_dir)
    if docs:
        annotated = ann.for_site([ann.annotate_tree(commands, tree) for tree in docs])
    if annotated:
        annotated = {**annotated, "problems": [public.public_text(p) for p in annotated.get("problems", [])]}
    doc = matrix_json.build(commands)
    if past.previous:
        doc["previous"] = past.previous.get("generated")
    changes = run_history.changes(past.previous, doc)
    if unsaved:
        unsaved = {k: public.public_text(str(unsaved.get(k) or "")) for k in ("date", "run", "why")}
    generated = pages.render(
        commands, doc, changes, had_history=history_dir is not None, annotated=annotated, unsaved=unsaved
    )
    t1 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="driftmatrix-site-") as tmp:
        stage = Path(tmp)
        shutil.copytree(project / "docs", stage / "docs")
        shutil.copy(project / "mkdocs.yml", stage / "mkdocs.yml")
        for rel, text in generated.items():
            path = stage / "docs" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(strip_controls(text), encoding="utf-8")  # no ESC, BEL, … of the docs or vLLM on a page
        site_dir = site_dir.resolve()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mkdocs",
                "build",
                "--strict",
                "--clean",
                "-q",
                "-f",
                str(stage / "mkdocs.yml"),
                "-d",
                str(site_dir),
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode:
            raise PublishError(f"mkdocs build --strict failed:\n{(proc.stderr or proc.stdout)[-3000:]}")
        search_index.trim(site_dir)
    t2 = time.monotonic()
    doc.pop("previous", None)
    text = json_text(json.dumps(doc, indent=1, ensure_ascii=False))  # the same data, no bidi control raw
    (site_dir / "matrix.json").write_text(text, encoding="utf-8")
    if history_dir is not None:
        run_history.keep(text, doc, history_dir, keep_snapshots)
    return Published(
        site_dir,
        len(generated),
        doc,
        changes,
        results.problems + past.problems,
        {"generate_s": round(t1 - t0, 2), "mkdocs_s": round(t2 - t1, 2)},
        past.previous,
    )


def _commands(results: Results, history_dir: Path | None) -> tuple[run_history.History, list]:
    """The earlier runs and this run's command views, the site's and the snapshot's alike: the one
    place host paths are taken out (public.public_results)."""
    past = run_history.load(history_dir)
    return past, views_of(public.public_results(results), past.snapshots)


def snapshot(results: Results, history_dir: Path, keep_snapshots: int = run_history.DEFAULT_KEEP_SNAPSHOTS) -> Path:
    """This run's matrix.json into the history folder without the site (`publish --snapshot-only`):
    the scheduled workflow's save-state job keeps the day's history even where the site then fails
    to build, and renders nothing while it holds write access. The same document as `build_site`'s."""
    doc = matrix_json.build(_commands(results, history_dir)[1])
    return run_history.keep(json_text(json.dumps(doc, indent=1, ensure_ascii=False)), doc, history_dir, keep_snapshots)
