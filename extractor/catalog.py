"""Merge per-file findings into one catalog: identical invocations become one snippet
with several sources; counts for the summary table."""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path

from driftmatrix.extractor import release_files, sites
from driftmatrix.extractor.bounds import read_head
from driftmatrix.extractor.corpus import Result, SourceError, Tree, detect, extract_file, files_of, is_page
from driftmatrix.extractor.file_text import read_text
from driftmatrix.extractor.html_source import extract_html
from driftmatrix.extractor.markdown_sources import card_metadata, card_model_id
from driftmatrix.extractor.release_files import ReleaseTrees
from driftmatrix.extractor.serve_args import placeholder_model_words
from driftmatrix.extractor.snippet_record import Catalog, CorpusInfo, Diagnostic, Lint, Snippet, Source, WrittenFor


def merge(snippets: list[Snippet]) -> list[Snippet]:
    """One record per id, sources and lints united, in first-seen order. Linear in the number of
    snippets: what each record already holds is kept in sets beside it (a page repeating one command
    N times made `x not in list` cost N^2 comparisons: 10,000 copies took 84 s, issue 44)."""
    by_id: dict[str, _Union] = {}
    for snippet in snippets:
        known = by_id.get(snippet.id)
        if known is None:
            by_id[snippet.id] = _Union(snippet)
        else:
            known.add(snippet)
    return [union.done() for union in by_id.values()]


_SOURCE_KEY = attrgetter(*(f.name for f in fields(Source)))
_LINT_KEY = attrgetter(*(f.name for f in fields(Lint)))
"""Every field's value, as the dataclasses' own `==` compares them (they are unhashable: mutable)."""


class _Union:
    """A snippet and what it already holds, for `merge`. A merged snippet's records are exactly what
    the list scans gave: each new source (lint) kept unless an earlier snippet of the id held an equal
    one, placeholders deduplicated once another snippet was merged in."""

    def __init__(self, snippet: Snippet):
        self.snippet = snippet
        self.sources = set(map(_SOURCE_KEY, snippet.sources))
        self.lints = set(map(_LINT_KEY, snippet.lints))
        self.placeholders: dict[str, None] | None = None  # set at the first merge, as dict.fromkeys was

    def add(self, snippet: Snippet) -> None:
        known = self.snippet
        known.sources += _new(snippet.sources, self.sources, _SOURCE_KEY)
        known.lints += _new(snippet.lints, self.lints, _LINT_KEY)
        if self.placeholders is None:
            self.placeholders = dict.fromkeys(known.placeholders)
        self.placeholders.update(dict.fromkeys(snippet.placeholders))
        if known.runnable and not snippet.runnable:
            known.runnable, known.reason = False, snippet.reason

    def done(self) -> Snippet:
        if self.placeholders is not None:
            self.snippet.placeholders = list(self.placeholders)
        return self.snippet


def _new(items: list, seen: set, key) -> list:
    """The items whose key is not in `seen` (checked against `seen` as it was: two equal new items
    are both kept, as the list scan kept them), their keys then added to it."""
    fresh = [item for item in items if key(item) not in seen]
    seen.update(map(key, fresh))
    return fresh


def _file_job(job: tuple[Tree, Path]) -> tuple[list[Snippet], list[Diagnostic]]:
    return extract_file(*job)


def _map_files(jobs: list[tuple[Tree, Path]], workers: int):
    """extract_file over all jobs, in order; forked workers when it pays off (the files
    are independent, and parsing is CPU-bound)."""
    if workers <= 1 or len(jobs) < 64 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(_file_job, jobs)
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        yield from pool.map(_file_job, jobs, chunksize=max(1, len(jobs) // (workers * 8)))


def default_workers() -> int:
    return int(os.environ.get("DRIFTMATRIX_WORKERS") or min(4, os.cpu_count() or 1))


def extract(
    sources: list[Path],
    on_diagnostic=None,
    workers: int | None = None,
    *,
    stable: str,
    written_for: WrittenFor | None = None,
    url_base: str = "",
    model_id: str = "",
    placeholder_models: list[str] = (),
    release_trees: ReleaseTrees | None = None,
) -> tuple[Catalog, list[str]]:
    """Extract every SOURCE; returns the catalog and the SOURCEs that could not be read.
    `stable`: the current stable release, for pages without versions of their own (the caller reads
    it from its targets: the stable pin lives with the runner's targets, a later stage); `written_for`: an override for every page;
    `url_base`: where pages of sources that are not the vLLM docs are published; `model_id`: the
    model of a model card; `placeholder_models`: more words that stand for the reader's model;
    `release_trees`: check the files commands name in vLLM's tree against the releases their pages are
    written for (extractor/release_files.py; None: not checked)."""
    placeholder_words = placeholder_model_words(list(placeholder_models))
    diagnostics: list[Diagnostic] = []
    unusable: list[str] = []
    results: list[Result] = []
    jobs: list[tuple[Tree, Path]] = []
    owner: list[Result] = []
    trees: list[Tree] = []
    for path in sources:
        try:
            if path.is_file() and path.suffix.lower() in (".html", ".htm"):
                results.append(extract_html(path, stable, written_for, url_base, placeholder_words))
                continue
            tree = _prepared(detect(path), stable, written_for, url_base, placeholder_words)
            diagnostics += _card_model(tree, model_id)
        except SourceError as err:
            unusable.append(str(path))
            diagnostics.append(Diagnostic("error", "bad-source", str(err), file=str(path)))
            continue
        result = Result(CorpusInfo(tree.kind, tree.version, str(path), tree.layout, site=sites.described(tree.site)))
        results.append(result)
        trees.append(tree)
        for file in files_of(tree):
            jobs.append((tree, file))
            owner.append(result)
    for result, (found, diags) in zip(owner, _map_files(jobs, workers or default_workers())):
        result.info.files += 1
        result.info.snippets += len(found)
        result.snippets += found
        result.diagnostics += diags
    for result in results:
        diagnostics += result.diagnostics
    snippets = merge([s for result in results for s in result.snippets])
    if release_trees is not None:
        diagnostics += _release_files(snippets, trees, release_trees)
    if on_diagnostic:
        for diag in diagnostics:
            on_diagnostic(diag)
    catalog = Catalog(
        snippets=snippets,
        diagnostics=diagnostics,
        corpora=[result.info for result in results],
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    return catalog, unusable


def _prepared(
    tree: Tree, stable: str, written_for: WrittenFor | None, url_base: str, placeholder_words: frozenset[str]
) -> Tree:
    tree.stable = stable
    tree.written_for = written_for or tree.versions()
    tree.url_base = url_base
    tree.placeholder_models = placeholder_words
    if tree.kind == "site":
        tree.site = sites.read(tree.root, url_base)
    return tree


def extract_pages(root: Path, pages: list[Path], *, stable: str) -> tuple[list[Snippet], list[Diagnostic]]:
    """Only these pages of the tree at `root` (a docs tree, a recipes repository, a Markdown folder),
    read as `extract` reads them there: what `driftmatrix check` reads of a change. A page that
    cannot be read is a diagnostic; the others are still read."""
    tree = _prepared(detect(root), stable, None, "", placeholder_model_words([]))
    snippets: list[Snippet] = []
    diagnostics: list[Diagnostic] = []
    for page in pages:
        try:
            if not is_page(tree, page):
                continue  # not a page of this tree (a workflow's YAML, mkdocs.yaml): nothing to read
            found, diags = extract_file(tree, page)
        except (OSError, ValueError) as err:
            diags, found = [Diagnostic("error", "unreadable", str(err), file=str(page))], []
        snippets += found
        diagnostics += diags
    return merge(snippets), diagnostics


def _release_files(snippets: list[Snippet], trees: list[Tree], release_trees: ReleaseTrees) -> list[Diagnostic]:
    """The files commands name in vLLM's tree, checked against their pages' releases; a docs tree being
    extracted that holds its own examples/ (an sdist, a checkout at a tag) is that release's tree."""
    for tree in trees:
        if tree.kind == "vllm-docs" and tree.layout in ("sdist", "git-tag") and (tree.root / "examples").is_dir():
            release_trees.local.setdefault(tree.version, tree.root)
    by_corpus = {(t.kind, t.version): t for t in trees}
    pages: dict[Path, str] = {}

    def page_text(source: Source) -> str:
        tree = by_corpus.get((source.corpus, source.version))
        if tree is None:
            return ""
        path = tree.base / source.file
        if path not in pages:
            pages[path] = read_text(path, source.corpus, source.version, source.file, tree.root)[0] or ""
        return pages[path]

    return release_files.check(snippets, release_trees, page_text)


def _card_model(tree: Tree, model_id: str) -> list[Diagnostic]:
    """A model card's model: `--model-id`, else its front matter; say so when neither has one."""
    if tree.kind != "model-card":
        return []
    card = tree.root if tree.root.is_file() else tree.root / "README.md"
    meta = card_metadata(read_head(card, tree.root) or "") or {}
    tree.model_id = model_id or card_model_id(meta)
    if tree.model_id:
        return []
    return [
        Diagnostic(
            "warning",
            "card-without-model-id",
            "a Hugging Face model card whose front matter names no model id: `vllm serve` without a "
            "model keeps none (pass --model-id ORG/NAME)",
            tree.kind,
            tree.version,
            card.name,
        )
    ]


def print_diagnostic(diag: Diagnostic) -> None:
    where = ":".join(str(x) for x in (diag.file, diag.line) if x not in (None, ""))
    corpus = f"{diag.corpus} {diag.version}: " if diag.corpus else ""
    print(f"driftmatrix: {diag.severity}: {corpus}{where}: {diag.message} [{diag.code}]", file=sys.stderr)


@dataclass
class Summary:
    """Counts shown after an extraction."""

    per_corpus: dict[str, Counter] = field(default_factory=dict)
    not_runnable: Counter = field(default_factory=Counter)
    lints: Counter = field(default_factory=Counter)
    diagnostics: Counter = field(default_factory=Counter)
    total: int = 0


def summarize(catalog: Catalog) -> Summary:
    summary = Summary(total=len(catalog.snippets))
    for snippet in catalog.snippets:
        for corpus in dict.fromkeys(f"{s.corpus} {s.version}".strip() for s in snippet.sources):
            counts = summary.per_corpus.setdefault(corpus, Counter())
            counts["snippets"] += 1
            counts[snippet.kind] += 1
            counts["spec"] += snippet.speculative_config is not None
            counts["runnable"] += snippet.runnable
        if not snippet.runnable:
            summary.not_runnable[(snippet.reason or "").split(":", 1)[0]] += 1
        for lint in snippet.lints:
            summary.lints[lint.code] += 1
    for diag in catalog.diagnostics:
        summary.diagnostics[f"{diag.severity}:{diag.code}"] += 1
    return summary
