"""Shared fixtures: the real corpora in ../shared/corpus (never copied into the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("DRIFTMATRIX_CORPUS", REPO.parent / "shared" / "corpus"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "vllm-docs" / "0.33.0").is_dir():
        pytest.fail(f"the shared corpus is missing at {CORPUS} (set DRIFTMATRIX_CORPUS)")
    return CORPUS
