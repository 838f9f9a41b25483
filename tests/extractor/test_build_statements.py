"""What a page's reader installs, read from the page (issue 58, points 3 and 4): a vendor's image whose
tag names a vLLM version, vLLM built from source (its main branch), a fork of vLLM, and version
statements in the page's own language — each written for what its reader runs, with the statement
that said so as its origin."""

from __future__ import annotations

from pathlib import Path

from packaging.specifiers import SpecifierSet

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.written_for import statements


def _folder(root: Path, page: str) -> Path:
    folder = root / "notes"
    folder.mkdir(parents=True)
    (folder / "guide.md").write_text(page)
    return folder


def _by_line(root: Path) -> dict[int, object]:
    catalog, _ = extract([root], stable="0.34.0")
    return {src.line: src.written_for for s in catalog.snippets for src in s.sources}


def _said(text: str):
    [found] = statements(text, "0.34.0", "p.md")
    return found.written_for


def test_a_vendor_image_whose_tag_names_a_version_is_written_for_that_release(tmp_path):
    page = (
        "# Deploy\n\n```bash\ndocker run --gpus all acme-registry.example.com/acme/vllm-openai:v0.22.0-cu129 "
        "vllm serve org/m\n```\n\n```bash\ndocker run acme/vllm-openai:v0.8.5 vllm serve org/m2\n```\n"
        "\n```bash\ndocker run acme/inference:acme-kvcache-vllm-v0.11.0rc1 vllm serve org/n\n```\n"
        "\n```bash\ndocker run nvcr.io/nvidia/pytorch:24.01-py3 vllm serve org/o\n```\n"
    )
    wf = _by_line(_folder(tmp_path, page))
    assert [(w.spec, w.basis) for _, w in sorted(wf.items())] == [
        ("==0.22.0", "page"),
        ("==0.8.5", "page"),
        ("==0.11.0rc1", "page"),
        (">=0.34.0", "default"),  # PyTorch's release in the tag is not vLLM's
    ]
    first = wf[min(wf)]
    assert "v0.22.0-cu129" in first.origin and "vendor" in first.origin
    assert SpecifierSet(first.spec).contains("0.22.0") and not SpecifierSet(first.spec).contains("0.34.0")


def test_a_tag_that_names_another_projects_release_still_names_no_vllm_version():
    # LMCache tags its vLLM image with LMCache's own release; a date is no version at all
    assert _said("    image: lmcache/vllm-openai:v0.3.7").spec == "===v0.3.7"
    assert _said("    image: acme/vllm-openai:2025-05-05-v1").basis == "image"
    assert _said("    image: acme/vllm-openai:v0.8.5").spec == "==0.8.5"  # a manifest's image line too


def test_a_tag_that_names_a_commit_names_no_release():
    """aibrix's vineyard samples run `aibrix/vllm-openai:v0.6.1-edb07092-20250118` (a build of a commit, with
    `--disable-fastapi-docs`, which 0.6.2 added): read as 0.6.1 the option history called it doc-drift."""
    said = _said("          image: aibrix/vllm-openai:v0.6.1-edb07092-20250118")
    assert (said.spec, said.basis) == ("===v0.6.1-edb07092-20250118", "image")
    assert _said("          image: aibrix/vllm-openai:v0.6.1-20250118").spec == "==0.6.1"  # a date is no commit


def test_building_from_source_means_the_main_branch_not_the_base_images_tag(tmp_path):
    page = (
        "# From source\n\n```bash\ndocker run -it vllm/vllm-openai:v0.20.1 bash\n"
        "git clone https://github.com/vllm-project/vllm.git\ncd vllm\nVLLM_USE_PRECOMPILED=1 pip install -e .\n"
        "vllm serve org/m --max-model-len 4096\n```\n"
    )
    wf = _by_line(_folder(tmp_path, page))
    serve = wf[max(wf)]
    assert serve.basis == "nightly" and serve.spec == ">0.34.0", serve
    assert "built from source" in serve.origin and "guide.md:5" in serve.origin


def test_a_source_checkout_at_a_tag_is_that_release_and_a_clone_not_installed_says_nothing():
    pinned = "git clone https://github.com/vllm-project/vllm\ncd vllm\ngit checkout v0.9.2\npip install -e .\n"
    assert _said(pinned).spec == "==0.9.2"
    assert statements("git clone https://github.com/vllm-project/vllm\nls vllm/examples\n", "0.34.0", "p") == []
    # pip straight from vLLM's repository: its main branch, or the tag it names
    assert _said("pip install git+https://github.com/vllm-project/vllm.git").spec == ">0.34.0"
    assert _said("pip install git+https://github.com/vllm-project/vllm.git@v0.9.2").spec == "==0.9.2"
    # a plugin's repository is not vLLM's source
    assert statements("git clone https://github.com/vllm-project/vllm-gaudi\npip install -e .\n", "0.34.0", "p") == []


def test_chinese_and_english_prose_state_versions():
    assert _said("需要 vLLM 0.21 或更高版本。").spec == ">=0.21"
    assert _said("本教程要求 vLLM >= 0.19.1").spec == ">=0.19.1"
    assert _said("vLLM v0.22.0 及以上版本支持该功能").spec == ">=0.22.0"
    assert _said("We recommend `vllm>=0.21` for this guide.").spec == ">=0.21"
    assert _said("Supported since vLLM 0.18.0.").spec == ">=0.18.0"
    # a note about what another version does is not what the reader runs
    assert statements("**Note: With vLLM >= 0.11.1, compatibility has been improved.**", "0.34.0", "p") == []
    assert "需要 vLLM 0.21" in _said("需要 vLLM 0.21 或更高版本。").origin


def test_a_forks_page_is_written_for_the_fork():
    by_link = _said("Before you start, install the latest [vllm-fork](https://github.com/HabanaAI/vllm-fork).")
    assert by_link.basis == "fork" and "HabanaAI/vllm-fork" in by_link.spec
    assert not SpecifierSet(by_link.spec, prereleases=True).contains("0.34.0")  # no stock release is it
    assert _said("pip install git+https://github.com/acme/vllm.git@acme-main").basis == "fork"
    assert _said("git clone https://github.com/acme/vllm\ncd vllm && pip install -e .").basis == "fork"
    assert _said("This guide uses the Acme build of vLLM.").basis == "fork"
    # vLLM's own builds are stock: no fork
    assert statements("Use the CPU build of vLLM here.", "0.34.0", "p") == []
    assert statements("the latest nightly build of vLLM", "0.34.0", "p")[0].written_for.basis == "nightly"


def test_the_real_gaudi_site_has_one_fork_page(corpus):
    catalog, _ = extract([next((corpus / "thirdparty").glob("vllm-gaudi-*"))], stable="0.34.0")
    forks = {(src.file, src.plugin) for s in catalog.snippets for src in s.sources if src.written_for.basis == "fork"}
    # "install the latest [vllm-fork](…HabanaAI/vllm-fork…)": the fork, not stock vLLM with the site's plugin
    assert forks == {("docs/configuration/multi_node.md", "")}
    others = {src.plugin for s in catalog.snippets for src in s.sources if src.written_for.basis != "fork"}
    assert others == {"vllm-gaudi"}
