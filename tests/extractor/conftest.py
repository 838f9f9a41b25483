from __future__ import annotations

from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU


@pytest.fixture(scope="session")
def real_catalog(corpus: Path) -> Catalog:
    """The three real corpora extracted once for the whole session."""
    catalog, unusable = extract(
        stable=stable_pin(SEED_CPU),
        sources=[
            corpus / "vllm-docs" / "0.20.1",
            corpus / "vllm-docs" / "0.33.0",
            corpus / "recipes" / "8959cf6",
        ],
    )
    assert unusable == []
    return catalog


@pytest.fixture(scope="session")
def snippets_from(real_catalog: Catalog):
    """snippets_from(corpus, version, file) -> the real catalog's snippets with a source there."""

    def find(corpus: str, version: str, file: str):
        return [
            s
            for s in real_catalog.snippets
            if any(src.corpus == corpus and src.version == version and src.file == file for src in s.sources)
        ]

    return find


@pytest.fixture(scope="session")
def sdist_0340() -> tuple[Path, Catalog]:
    """The vllm 0.34.0 sdist's docs, examples and recipes tree (newer than the corpora's recipes
    snapshot: presets with `runbook:` text), fetched once into the driftmatrix cache, and its catalog."""
    from driftmatrix.common.package_index import PackageIndexError
    from driftmatrix.extractor.sdist import fetch_docs
    from driftmatrix.runner.settings import cache_dir

    try:
        tree = fetch_docs("0.34.0", cache_dir() / "sdists")
    except PackageIndexError as err:
        pytest.skip(f"the vllm 0.34.0 sdist could not be had: {err}")
    catalog, unusable = extract(stable=stable_pin(SEED_CPU), sources=[tree])
    assert unusable == []
    return tree, catalog
