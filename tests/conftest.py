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


# The modules that start most servers go first, so that with `-n 2 --dist loadfile` (pytest-xdist,
# the README's test command: a module's tests, and so its module-scoped servers, stay in one
# worker) they overlap each other and everything else instead of forming the tail.
SLOWEST_FIRST = ("test_gemma4.py", "test_serve.py", "test_standins.py", "test_hygiene.py", "test_judged.py",
                 "test_tiers.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))
