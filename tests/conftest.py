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


# The modules that take longest go first, longest first, so that with `-n 2 --dist loadfile`
# (pytest-xdist, the README's test command: a module's tests, and so its module-scoped servers, stay
# in one worker) they overlap each other and the short modules fill the end instead of one long module
# forming the tail. Ordered by wall time (CI's --durations and each module measured alone: its vLLM
# servers, helpers, twin builds, site builds). test_judged makes the session's config_run (shared with
# test_tiers, made once); test_tiers comes long after, so no worker waits idle for the other to make it.
SLOWEST_FIRST = (
    "test_gemma4.py",
    "test_serve.py",
    "test_hostile.py",
    "test_fixes.py",
    "test_twins_served.py",
    "test_cpu_ranks_served.py",
    "test_hub.py",
    "test_twins.py",
    "test_twins_generic.py",
    "test_judged.py",
    "test_hygiene.py",
    "test_command_page.py",
    "test_model_missing.py",
    "test_plugin_values.py",
    "test_wheel.py",
    "test_history_agreement.py",
    "test_matrix_page.py",
    "test_trust_spellings.py",
    "test_plain_mode.py",
    "test_inert_output.py",
    "test_gate.py",
    "test_gate_head.py",
    "test_cuda_build.py",
    "test_placeholders.py",
    "test_browser.py",
    "test_tiers.py",
    "test_check.py",
    "test_precommit_hook.py",
)


def pytest_configure(config):
    # pytest-xdist reorders loadfile/loadscope work units by their number of tests (most first)
    # unless told not to; that would undo the order below.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))
