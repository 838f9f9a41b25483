"""`driftmatrix check` on a plugin's docs (issue 45): the Intel Gaudi plugin's own pages, read from
the shared corpus's thirdparty/ (the `corpus` fixture). Its values (`--quantization inc`, `--kv-cache-dtype fp8_inc`) are
"registered by a plugin, cannot say" — never a failure that would block the plugin's docs changes —
while an option no vLLM release ever had, on the same site, still fails."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def gaudi(corpus) -> Path:
    return next((corpus / "thirdparty").glob("vllm-gaudi-*"))


def check(*args: str) -> tuple[int, list[dict]]:
    proc = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "check", "--json", *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout)


def uses(result: dict) -> dict[str, dict]:
    return {u["text"]: u for u in result["uses"] if u["kind"] != "argument"}


def test_a_plugin_value_on_the_plugins_page_is_cannot_say(gaudi):
    rc, [result] = check(str(gaudi / "docs" / "configuration" / "quantization" / "inc.md"))
    assert rc == 0 and not result["failed"]
    for value in ("--quantization inc", "--kv-cache-dtype fp8_inc"):
        use = uses(result)[value]
        assert use["plugin"].startswith("registered by a plugin (vllm-gaudi)"), use
        assert set(use["on"].values()) == {None}  # cannot say, on every release asked


def test_a_value_no_stock_release_has_fails_alone_but_not_on_the_plugins_site(tmp_path, gaudi):
    command = "vllm serve org/m --quantization gaudi_fp8_dynamic"
    rc, [alone] = check(command)
    assert rc == 1 and uses(alone)["--quantization gaudi_fp8_dynamic"]["plugin"] is None
    site = tmp_path / "gaudi"  # the plugin's site as a doc writer's checkout holds it, with one new page
    (site / "docs").mkdir(parents=True)
    for name in ("mkdocs.yaml", "README.md", "LICENSE"):
        shutil.copy(gaudi / name, site / name)
    (site / "docs" / "fp8.md").write_text(f"# FP8\n\n```bash\n{command}\n```\n")
    rc, [paged] = check(str(site / "docs" / "fp8.md"))
    assert (
        rc == 0 and "registered by a plugin (vllm-gaudi)" in uses(paged)["--quantization gaudi_fp8_dynamic"]["plugin"]
    )


def test_a_removed_option_still_fails_on_the_plugins_site_one_none_has_is_cannot_say(tmp_path, gaudi):
    site = tmp_path / "gaudi"
    (site / "docs").mkdir(parents=True)
    for name in ("mkdocs.yaml", "README.md", "LICENSE"):
        shutil.copy(gaudi / name, site / name)
    (site / "docs" / "swap.md").write_text("# Swap\n\n```bash\nvllm serve org/m --swap-space 4\n```\n")
    rc, [removed] = check(str(site / "docs" / "swap.md"))
    assert rc == 1 and removed["failed"] and uses(removed)["--swap-space"]["on"] == {"0.26.0": False}
    # `--weights-load-device`: no stock release has it — a plugin may add options (vllm-omni adds --omni)
    rc, results = check(str(gaudi / "docs" / "configuration" / "warm-up" / "managing_warm-up.md"))
    assert rc == 0 and not any(r["failed"] for r in results)
    [warmup] = [r for r in results if "--weights-load-device" in uses(r)]
    assert "a plugin (vllm-gaudi) may add it" in uses(warmup)["--weights-load-device"]["plugin"]


def test_an_option_a_plugin_adds_is_cannot_say_where_the_command_gives_it(corpus):
    """vllm-omni adds `--omni` to `vllm serve`: the recipes' GLM-Image gives it (models/zai-org/GLM-Image.yaml)."""
    rc, [alone] = check("vllm serve zai-org/GLM-Image --omni")
    assert rc == 0 and "vllm-omni" in uses(alone)["--omni"]["plugin"]


def test_a_command_in_a_pinned_image_is_cannot_say_not_a_tick(corpus):
    """The production stack's tutorial 07 runs `lmcache/vllm-openai:2025-03-10`: written for the vLLM inside
    it, no release is asked — neither a failure nor a ✓."""
    page = (
        next((corpus / "thirdparty").glob("production-stack-*"))
        / "tutorials"
        / "07-benchmark-multi-round-qa-single-gpu.md"
    )
    rc, results = check(str(page))
    assert rc == 0 and results and all(r["asked"] == [] and not r["failed"] for r in results)
    text = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "check", "-v", str(page)], capture_output=True, text=True, timeout=300
    ).stdout
    assert "? cannot say whether it parses on no release" in text and "✓" not in text
