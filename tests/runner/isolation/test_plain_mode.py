"""Issue 57's red team, replayed through `driftmatrix run` on the real CPU builds: without bubblewrap
(auto mode on a fresh machine) every way vLLM loads a file or code the docs choose — a JSON key of a
config option, its dotted form, a relative path, a logging config whose formatter is a factory, module
paths, a class override, a host file as a template — is refused before anything runs, each naming what
is not known to be inert; with the sandbox the same page leaves no marker either. A command that
replaces vLLM's model registry cannot change the verdict of the command after it, sandboxed or not.
The payloads are markers only: a file written into a scratch folder, a canary read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from runhelp import CACHE, catalog_of, docs_tree, outcomes, run_argv

from driftmatrix.runner.builds.targets import SEED_CPU

PLUGIN = """
import os
open(os.path.join(MARKERS, "plugin-ran"), "w").write(open(CANARY).read())
"""


def _page(scratch: Path) -> tuple[Path, Path]:
    """The red team's page in a docs tree beside its payloads; (the tree, the markers folder)."""
    markers, docs = scratch / "markers", scratch / "docs"
    markers.mkdir()
    canary = scratch / "canary"
    canary.write_text("secret")
    docs.mkdir()
    plugin = docs / "plugin.py"
    plugin.write_text(PLUGIN.replace("MARKERS", repr(str(markers))).replace("CANARY", repr(str(canary))))
    factory = docs / "factory.json"
    factory.write_text(
        json.dumps(
            {
                "version": 1,
                "formatters": {"f": {"()": "builtins.open", "file": str(markers / "factory-ran"), "mode": "w"}},
                "handlers": {},
                "loggers": {},
            }
        )
    )
    vectors = [
        f'--structured-outputs-config \'{{"reasoning_parser_plugin": "{plugin}"}}\'',
        f"--structured-outputs-config.reasoning_parser_plugin {plugin}",
        "--structured-outputs-config.reasoning_parser_plugin ../docs/plugin.py",
        f"--log-config-file {factory}",
        f'--logging-config \'{{"pylogging_config_file": "{factory}"}}\'',
        '--kv-transfer-config \'{"kv_connector": "Planted", "kv_role": "kv_both", '
        '"kv_connector_module_path": "planted_connector"}\'',
        '--compilation-config \'{"backend": "planted_backend.compile"}\'',
        '--model-class-overrides \'{"Qwen3ForCausalLM": "planted_model.Model"}\'',
        f"--chat-template {canary}",
    ]
    page = "# Red team\n\n" + "".join(
        f"```bash\nvllm serve org/tiny --max-model-len 256 {vector}\n```\n\n" for vector in vectors
    )
    docs_tree(docs, page)
    return docs, markers


NAMED = {  # what each vector's refusal names
    "reasoning_parser_plugin": "reasoning_parser_plugin",
    "--log-config-file": "--log-config-file",
    "--logging-config": "--logging-config",
    "kv_connector_module_path": "kv_connector_module_path",
    "planted_backend": "backend",
    "--model-class-overrides": "--model-class-overrides",
    "--chat-template": "--chat-template",
}


def _run(snippets: Path, targets: Path, work: Path, env: dict, tier: str, *extra: str) -> list:
    work.mkdir()
    out = work / "o.jsonl"
    argv = run_argv(str(snippets), "--targets", str(targets), "--tier", tier, "--cache-dir", str(CACHE))
    proc = subprocess.run(
        [*argv, "-o", str(out), "--workdir", str(work / "run"), *extra],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return outcomes(out)


@pytest.fixture(scope="module")
def red_team(tiny_models, tmp_path_factory):
    scratch = tmp_path_factory.mktemp("red-team")
    docs, markers = _page(scratch)
    targets = scratch / "targets.toml"
    targets.write_text(SEED_CPU.read_text() + f'"org/tiny" = "{tiny_models["target"]}"\n')
    snippets, _ = catalog_of(docs)
    plain = {**os.environ, "DRIFTMATRIX_BWRAP": str(scratch / "no-bwrap"), "DRIFTMATRIX_SANDBOX": "auto"}
    contained = {**os.environ, "DRIFTMATRIX_SANDBOX": "required"}
    found = {"plain": _run(snippets, targets, scratch / "plain", plain, "start")}
    found["markers_plain"] = sorted(p.name for p in markers.iterdir())
    found["sandboxed"] = _run(snippets, targets, scratch / "sandboxed", contained, "config", "--target", "nightly")
    found["markers"] = sorted(p.name for p in markers.iterdir())
    return found


def test_without_a_sandbox_every_vector_is_refused_and_named(red_team):
    assert red_team["markers_plain"] == []
    assert {o.target.name for o in red_team["plain"]} == {"stable", "nightly"}
    for o in red_team["plain"]:
        written = " ".join(o.argv)
        named = next(name for key, name in NAMED.items() if key in written)
        if o.verdict == "FAIL":  # an option this build does not have: its own parser says so, nothing ran
            assert o.stage == "parse" and "unrecognized arguments" in o.reason, (o.argv, o.reason)
            continue
        if "--chat-template" in o.argv:  # a host path is never handed through: a template of ours stands in
            assert "canary" not in written and (o.verdict, o.stage) == ("SKIP", "start"), (o.argv, o.reason)
            assert "is a path on the reader's machine or in their container" in o.reason, o.reason
            continue
        assert (o.verdict, o.stage) == ("SKIP", "config"), (o.argv, o.target.name, o.verdict, o.stage, o.reason)
        assert o.reason.startswith("not run without a sandbox: ") and named in o.reason, (o.argv, o.reason)
        assert "is not known to be inert" in o.reason and "bubblewrap" in o.reason


def test_sandboxed_the_same_page_leaves_no_marker(red_team):
    assert red_team["sandboxed"] and red_team["markers"] == []
    assert all(o.host["contained"] for o in red_team["sandboxed"])


REPLACER = 'vllm serve org/tiny --max-model-len 256 --model-class-overrides \'{"Qwen3ForCausalLM": "planted.Nothing"}\''
HONEST = "vllm serve org/tiny --max-model-len 300"


@pytest.fixture(scope="module")
def replaced(tiny_models, tmp_path_factory):
    scratch = tmp_path_factory.mktemp("replaced")
    targets = scratch / "targets.toml"
    targets.write_text(SEED_CPU.read_text() + f'"org/tiny" = "{tiny_models["target"]}"\n')
    snippets, _ = catalog_of(
        docs_tree(scratch / "docs", f"# R\n\n```bash\n{REPLACER}\n```\n\n```bash\n{HONEST}\n```\n")
    )
    honest = next(s["id"] for s in json.loads(snippets.read_text())["snippets"] if "300" in s["argv"])
    modes = {
        "sandboxed": {**os.environ, "DRIFTMATRIX_SANDBOX": "required"},
        "plain": {**os.environ, "DRIFTMATRIX_BWRAP": str(scratch / "no-bwrap"), "DRIFTMATRIX_SANDBOX": "auto"},
    }
    found = {}
    for mode, env in modes.items():
        together = _run(snippets, targets, scratch / f"{mode}-together", env, "config", "--target", "nightly")
        alone = _run(
            snippets, targets, scratch / f"{mode}-alone", env, "config", "--target", "nightly", "--only", honest
        )
        found[mode] = (
            next(o for o in together if o.snippet_id == honest),
            next(o for o in alone if o.snippet_id == honest),
            next(o for o in together if o.snippet_id != honest),
        )
    return found


@pytest.mark.parametrize("mode", ["sandboxed", "plain"])
def test_a_registry_override_first_changes_nothing_for_the_next_command(replaced, mode):
    together, alone, replacer = replaced[mode]
    assert (together.verdict, together.stage) == ("PASS", "config"), together.reason
    assert (together.verdict, together.stage, together.reason) == (alone.verdict, alone.stage, alone.reason)
    if mode == "plain":
        assert replacer.verdict == "SKIP" and "--model-class-overrides" in replacer.reason
    else:  # it ran, in its own process: vLLM refused the class it names
        assert replacer.verdict == "FAIL" and replacer.stage == "config", replacer.reason


def test_an_option_the_allow_list_never_saw_is_not_run_plainly(tmp_path):
    """A build that says it is 0.32.0 and adds an option of its own (an int: harmless by its type, yet
    no review has seen it): without a sandbox the command with it SKIPs naming it; the same command
    without it runs to its config."""
    from fake_vllm import make_model, make_target

    python = make_target(tmp_path / "fake-env", version="0.32.0", added="--added-by-this-build")
    model = make_model(tmp_path / "models" / "plain", tmp_path / "markers", remote=False)
    targets = tmp_path / "targets.toml"
    targets.write_text(f'[targets.fake]\npython = "{python}"\n\n[models]\n"org/plain" = "{model}"\n')
    base = "vllm serve org/plain --max-model-len 256"
    page = f"# New\n\n```bash\n{base} --added-by-this-build 3\n```\n\n```bash\n{base}\n```\n"
    snippets, _ = catalog_of(docs_tree(tmp_path / "docs", page))
    plain = {**os.environ, "DRIFTMATRIX_BWRAP": str(tmp_path / "no-bwrap"), "DRIFTMATRIX_SANDBOX": "auto"}
    found = {
        "--added-by-this-build" in " ".join(o.argv): o
        for o in _run(snippets, targets, tmp_path / "run", plain, "config")
    }
    assert (found[True].verdict, found[True].stage) == ("SKIP", "config"), found[True].reason
    assert "`--added-by-this-build` is not known to be inert" in found[True].reason
    assert (found[False].verdict, found[False].stage) == ("PASS", "config"), found[False].reason
