"""Version statements beside a page (issue 58, point 3): a Sphinx site's conf.py substitutions, a
README's requirements.txt / pyproject.toml, a plugin's Docusaurus versioned docs — each page written for
what its reader sees, its origin naming the file that said so."""

from __future__ import annotations

from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.side_files import sphinx_config


def _repository(root: Path, files: dict[str, str]) -> Path:
    repo = root / "proj"
    for name, text in {"README.md": "# Proj\n", "LICENSE": "Apache-2.0\n", **files}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return repo


def _written_for(repo: Path) -> dict[tuple[str, int], object]:
    catalog, _ = extract([repo], stable="0.34.0")
    return {(src.file, src.line): src.written_for for s in catalog.snippets for src in s.sources}


_CONF = '''
project = "vllm-acme"
vllm_version = "0.9.2"
release = "0.9.2rc1"
myst_substitutions = {
    "pip_vllm_version": vllm_version,
    "vllm_tag": f"v{vllm_version}",
    "unrelated": ["a", "b"],
}
rst_prolog = """
.. |vllm_pin| replace:: 0.8.5
"""
import os  # never run: a call's value is not read
computed = os.environ.get("X", "0.1")
'''


def test_sphinx_substitutions_are_read_without_running_conf_py(tmp_path):
    repo = _repository(tmp_path, {"docs/source/conf.py": _CONF})
    myst, rst = sphinx_config(repo)
    assert myst == {"pip_vllm_version": "0.9.2", "vllm_tag": "v0.9.2"}
    assert rst == {"release": "0.9.2rc1", "vllm_pin": "0.8.5"}


def test_a_sphinx_page_is_read_with_its_substitutions_filled_in(tmp_path):
    page = (
        "# Install\n\n```{code-block} bash\n   :substitutions:\n\npip install vllm=={{ pip_vllm_version }}\n"
        "vllm serve org/m\n```\n"
    )
    rst_page = "# Old\n\n```bash\npip install vllm==|vllm_pin|\nvllm serve org/old\n```\n"
    repo = _repository(
        tmp_path, {"docs/source/conf.py": _CONF, "docs/source/install.md": page, "docs/source/old.md": rst_page}
    )
    wf = _written_for(repo)
    assert wf[("docs/source/install.md", 7)].spec == "==0.9.2", wf
    assert "vllm==0.9.2" in wf[("docs/source/install.md", 7)].origin  # the line as the reader sees it
    assert wf[("docs/source/old.md", 5)].spec == "==0.8.5"


def test_a_readmes_requirements_say_what_its_folder_runs(tmp_path):
    repo = _repository(
        tmp_path,
        {
            "examples/chat/README.md": "# Chat\n\n```bash\nvllm serve org/chat\n```\n",
            "examples/chat/requirements.txt": "# pinned\nopenai>=1\nvllm[audio]>=0.21.0 ; python_version>'3.9'\n",
            "examples/tool/README.md": "# Tool\n\n```bash\npip install vllm==0.20.1\nvllm serve org/tool\n```\n",
            "examples/tool/requirements.txt": "vllm>=0.21.0\n",
            "examples/batch/README.md": "# Batch\n\n```bash\nvllm serve org/batch\n```\n",
            "examples/batch/pyproject.toml": '[project]\nname = "b"\ndependencies = ["vllm==0.19.1", "torch"]\n',
            "examples/none/README.md": "# None\n\n```bash\nvllm serve org/none\n```\n",
            "examples/none/requirements.txt": "vllm-router\n",
        },
    )
    wf = _written_for(repo)
    chat = wf[("examples/chat/README.md", 4)]
    assert (chat.spec, chat.basis) == (">=0.21.0", "page") and "examples/chat/requirements.txt" in chat.origin
    assert wf[("examples/tool/README.md", 5)].spec == "==0.20.1"  # the page's own line is nearer
    assert wf[("examples/batch/README.md", 4)].spec == "==0.19.1"
    assert wf[("examples/none/README.md", 4)].basis == "default"  # another package named vllm-…: no vLLM pin


def test_a_plugins_versioned_docs_are_written_for_that_release_line(tmp_path):
    page = "# Serve\n\n```bash\nvllm serve org/m\n```\n"
    repo = _repository(
        tmp_path,
        {
            "README.md": "# vllm-ascend\n\nThe vllm-ascend plugin.\n",
            "website/versioned_docs/version-0.9.2/serve.md": page,
            "website/docs/serve.md": page,
        },
    )
    wf = _written_for(repo)
    old = wf[("website/versioned_docs/version-0.9.2/serve.md", 4)]
    assert (old.spec, old.basis) == ("==0.9.*", "site") and "versioned_docs" in old.origin
    assert wf[("website/docs/serve.md", 4)].basis == "default"


def test_another_projects_versioned_docs_say_nothing_of_vllm(tmp_path):
    repo = _repository(tmp_path, {"website/versioned_docs/version-0.1.0/serve.md": "```bash\nvllm serve org/m\n```\n"})
    assert _written_for(repo)[("website/versioned_docs/version-0.1.0/serve.md", 2)].basis == "default"
