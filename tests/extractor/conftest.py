from __future__ import annotations

from pathlib import Path

import pytest

from extractor.catalog import extract
from extractor.records import Catalog


@pytest.fixture(scope="session")
def real_catalog(corpus: Path) -> Catalog:
    """The three real corpora extracted once for the whole session."""
    catalog, unusable = extract([
        corpus / "vllm-docs" / "0.20.1",
        corpus / "vllm-docs" / "0.33.0",
        corpus / "recipes" / "8959cf6",
    ])
    assert unusable == []
    return catalog


@pytest.fixture(scope="session")
def snippets_from(real_catalog: Catalog):
    """snippets_from(corpus, version, file) -> the real catalog's snippets with a source there."""
    def find(corpus: str, version: str, file: str):
        return [s for s in real_catalog.snippets
                if any(src.corpus == corpus and src.version == version and src.file == file for src in s.sources)]
    return find
