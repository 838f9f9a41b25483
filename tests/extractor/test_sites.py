"""Another project's site is what it says it is (issue 45): read from the real snapshots in the shared
corpus's thirdparty/ (the `corpus` fixture), and small sites for what the snapshots do not show."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.corpus import detect


@pytest.fixture
def site(corpus):
    return lambda name: next((corpus / "thirdparty").glob(f"{name}-*"))


def sources(catalog):
    return [src for s in catalog.snippets for src in s.sources]


@pytest.mark.parametrize("name", ["vllm-gaudi", "tpu-inference", "speculators", "production-stack"])
def test_a_third_party_repository_is_a_site_not_vllm_docs(name, site):
    tree = detect(site(name))
    assert tree.kind == "site", (name, tree.kind, tree.layout)
    catalog, _ = extract([site(name)], stable="0.34.0")
    assert catalog.corpora[0].name == "site" and catalog.corpora[0].site["name"]
    for src in sources(catalog):
        assert src.corpus == "site"
        assert not (src.url or "").startswith("https://docs.vllm.ai"), src.url  # never a made-up vLLM address


def test_vllms_own_docs_stay_vllm_docs(corpus):
    assert detect(corpus / "vllm-docs" / "0.20.1").kind == "vllm-docs"
    assert detect(next((corpus / "recipes").iterdir())).kind == "recipes"


def test_a_site_links_only_where_it_says_it_lives(site):
    catalog, _ = extract([site("speculators")], stable="0.34.0")
    assert catalog.corpora[0].site["url_base"] == "https://vllm-project.github.io/speculators"
    docs = [s for s in sources(catalog) if s.file.startswith("docs/")]
    assert docs and all(s.url.startswith("https://vllm-project.github.io/speculators/") for s in docs)
    readme = [s for s in sources(catalog) if s.file == "README.md"]
    assert readme and all(s.url is None for s in readme)  # no commit known: no link rather than a wrong one
    gaudi, _ = extract([site("vllm-gaudi")], stable="0.34.0")  # its mkdocs config names no site_url
    assert gaudi.corpora[0].site["url_base"] == "" and all(s.url is None for s in sources(gaudi))


def test_a_site_is_read_whole_its_examples_too(site):
    catalog, _ = extract([site("tpu-inference")], stable="0.34.0")
    files = {s.file for s in sources(catalog)}
    assert any(f.startswith("examples/") for f in files), files
    assert any(f.startswith("scripts/") for f in files), files
    assert not any(f.startswith(".buildkite/") for f in files), files  # CI, not instructions


def test_the_plugin_a_site_documents_marks_its_pages(site):
    catalog, _ = extract([site("vllm-gaudi")], stable="0.34.0")
    assert catalog.corpora[0].site["plugin"] == "vllm-gaudi"
    # but for its page that installs the Habana fork: a fork replaces stock vLLM, it is no plugin's page
    assert {s.plugin for s in sources(catalog) if s.written_for.basis != "fork"} == {"vllm-gaudi"}
    speculators, _ = extract([site("speculators")], stable="0.34.0")
    assert {s.plugin for s in sources(speculators)} == {""}  # a library, not a plugin


def test_a_plugin_site_states_the_vllm_its_release_is_built_on(site):
    catalog, _ = extract([site("vllm-gaudi")], stable="0.34.0")
    wf = {s.written_for.spec for s in sources(catalog) if s.file == "docs/configuration/quantization/inc.md"}
    assert wf == {"==0.26.*"}  # README.md: "Version 0.26.0 … built on vLLM 0.26.0": the plugin's release line


def test_a_nightly_tpu_image_means_nightly(site):
    catalog, _ = extract([site("tpu-inference")], stable="0.34.0")
    [src] = [s for s in sources(catalog) if s.file.endswith("single-host/deploy-cpu-offload.yaml")]
    assert src.written_for.basis == "nightly" and "vllm/vllm-tpu:nightly-" in src.written_for.origin


def _mini_site(root: Path, extra: str, page: str) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text(
        "site_name: Some Plugin\nrepo_url: https://github.com/example/vllm-thing\n"
        "site_url: !ENV READTHEDOCS_CANONICAL_URL\nplugins:\n  - macros\n" + extra
    )
    (root / "docs" / "index.md").write_text(page)
    return root


def test_a_page_with_a_mkdocs_variable_is_written_for_its_value(tmp_path):
    root = _mini_site(
        tmp_path / "s",
        'extra:\n  pip_vllm_version: "0.11.0"\n  analytics:\n    provider: x\n',
        "# Install\n\n```bash\npip install vllm=={{ pip_vllm_version }}\n"
        "vllm serve org/model --max-model-len 1024\n```\n",
    )
    catalog, _ = extract([root], stable="0.34.0")
    [src] = sources(catalog)
    assert src.written_for.spec == "==0.11.0" and "vllm==0.11.0" in src.written_for.origin
    assert src.url is None  # `site_url: !ENV …` is not known here


def test_a_page_that_states_nothing_is_written_for_todays_stable(tmp_path):
    from driftmatrix.flaghistory.commands import shipped
    from driftmatrix.release_pins import todays_stable

    root = _mini_site(tmp_path / "s", "", "# Serve\n\n```bash\nvllm serve org/model\n```\n")
    stable = todays_stable()
    assert stable == shipped().releases[-1]  # the newest release the history holds, not the seed's pin
    catalog, _ = extract([root], stable=stable)
    [src] = sources(catalog)
    assert (src.written_for.spec, src.written_for.basis) == (f">={stable}", "default")


def test_main_branch_words_mean_the_nightly_builds(tmp_path):
    root = _mini_site(
        tmp_path / "s",
        "",
        "# Serve\n\nThis guide is built from vLLM's main branch.\n\n```bash\nvllm serve org/model\n```\n",
    )
    catalog, _ = extract([root], stable="0.34.0")
    [src] = sources(catalog)
    assert src.written_for.basis == "nightly" and src.written_for.spec == ">0.34.0"


def test_a_recipe_that_names_a_plugin_marks_only_the_commands_in_its_image(corpus):
    """models/Google/gemma-4-E2B-it.yaml has a TPU variant (the `vllm/vllm-tpu` image) beside its
    CUDA commands: only the TPU one is written for the tpu-inference plugin."""
    recipes = next((corpus / "recipes").iterdir())
    catalog, _ = extract([recipes], stable="0.34.0")
    here = [s for s in catalog.snippets if any(src.file == "models/Google/gemma-4-E2B-it.yaml" for src in s.sources)]
    marked = [s for s in here if any(src.plugin for src in s.sources)]
    assert len(here) > 3 and len(marked) == 1, [(s.image, [x.plugin for x in s.sources]) for s in here]
    assert marked[0].image.startswith("vllm/vllm-tpu") and marked[0].sources[0].plugin == "tpu-inference"


def test_a_command_in_a_pinned_image_is_written_for_the_vllm_inside_it(site):
    """The production stack's charts and manifests pin LMCache's vLLM images by date: the command runs
    the vLLM inside (`===<tag>`: no build of a version is it), not today's; `vllm/vllm-openai:latest` is."""
    catalog, _ = extract([site("production-stack")], stable="0.34.0")
    at = {(src.file, src.line): src.written_for for src in sources(catalog)}
    pinned = at[("tutorials/07-benchmark-multi-round-qa-single-gpu.md", 35)]  # tag "2025-03-10", --swap-space 0
    assert (pinned.spec, pinned.basis) == ("===2025-03-10", "image"), pinned
    latest = at[("tutorials/08-benchmark-multi-round-qa-multi-gpu.md", 110)]  # vllm/vllm-openai:latest
    assert (latest.spec, latest.basis) == (">=0.34.0", "default"), latest
    manifest = at[("src/gateway_inference_extension/configs/vllm/gpu-deployment.yaml", 19)]  # its container's image
    assert (manifest.spec, manifest.basis) == ("===2025-05-05-v1", "image"), manifest


# --- a plugin's image marks the commands that run it (issue 59 point 8) ---------------------------


def test_a_docker_command_in_a_plugins_image_is_written_for_that_plugin(tmp_path):
    page = tmp_path / "ascend.md"
    page.write_text(
        "# Ascend\n\n```bash\ndocker run --rm -it --device /dev/davinci0 quay.io/ascend/vllm-ascend:v0.9.1 \\\n"
        "  vllm serve Qwen/Qwen3-8B --port 8000\n```\n"
    )
    catalog, _ = extract([page], stable="0.34.0")
    [snippet] = catalog.snippets
    assert snippet.kind == "docker" and snippet.image == "quay.io/ascend/vllm-ascend:v0.9.1"
    assert [src.plugin for src in snippet.sources] == ["vllm-ascend"]


def test_a_page_that_runs_a_plugins_image_then_serves_in_it(tmp_path):
    (tmp_path / "run.md").write_text(
        "# Run\n\n```bash\nexport IMAGE=quay.io/ascend/vllm-ascend:v0.9.1\ndocker run --rm \\\n"
        "  --device /dev/davinci0 \\\n  -it $IMAGE bash\n```\n\nInside it:\n\n"
        "```bash\nvllm serve Qwen/Qwen3-8B --port 8000\n```\n"
    )
    (tmp_path / "table.md").write_text(  # names the image, runs stock vLLM: not written for the plugin
        "# Images\n\n| plugin | image |\n|---|---|\n| Ascend | `quay.io/ascend/vllm-ascend:v0.9.1` |\n\n"
        "```bash\nvllm serve Qwen/Qwen3-8B --port 8001\n```\n"
    )
    catalog, _ = extract([tmp_path], stable="0.34.0")
    marks = {(src.file, src.line): src.plugin for s in catalog.snippets for src in s.sources}
    assert marks == {("run.md", 13): "vllm-ascend", ("table.md", 8): ""}


@pytest.mark.parametrize(
    ("rel", "plugin"),
    [("samples/vllm-ascend/job.yaml", "vllm-ascend"), ("samples/vllm_omni/qwen2-5-omni-7b.yaml", "vllm-omni")],
)
def test_a_manifests_plugin_image_marks_its_container_command(rel, plugin, site):
    """aibrix's manifests: `image: quay.io/ascend/vllm-ascend:…` above `vllm serve` in a `bash -c` script,
    `image: vllm/vllm-omni:…` above an exec-form `vllm serve`."""
    catalog, _ = extract([site("aibrix")], stable="0.34.0")
    marks = [(s.kind, src.plugin) for s in catalog.snippets for src in s.sources if src.file == rel]
    assert marks == [("serve", plugin)]
