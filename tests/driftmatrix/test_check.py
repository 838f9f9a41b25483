"""`driftmatrix check` as a reader runs it: real commands from the corpora (the Gemma 4 page's, a
removed option, a made-up value, a model-dependent value), given as an argument, on stdin and as
PAGE:LINE; the verdicts a real matrix.json recorded for the exact command; exit statuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from driftmatrix.extractor.snippet_builder import shell_text
from driftmatrix.flaghistory.history import SHIPPED, FlagHistory

REPO = Path(__file__).resolve().parents[2]
GEMMA = "recipes/8959cf6/Google/Gemma4.md"


def check(*args: str, stdin: str | None = None) -> tuple[int, object, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "check", *args],
        capture_output=True,
        text=True,
        input=stdin,
        cwd=REPO,
        timeout=120,
    )
    body = json.loads(proc.stdout) if "--json" in args and proc.stdout.strip() else proc.stdout
    return proc.returncode, body, proc.stderr


@pytest.fixture(scope="module")
def history() -> FlagHistory:
    return FlagHistory.load(SHIPPED)


def _use(entry: dict, text: str) -> dict:
    return next(u for u in entry["uses"] if u["text"] == text)


def test_the_gemma_4_page_s_speculative_command_at_its_line(corpus, history):
    page = corpus / GEMMA
    line = next(i for i, ln in enumerate(page.read_text().splitlines(), 1) if 'gemma-4-31B-it-assistant", "num' in ln)
    code, body, err = check(f"{page}:{line}", "--docs", str(corpus / "recipes" / "8959cf6"), "--json")
    assert code in (0, 1), err
    [entry] = body
    assert "--speculative-config" in entry["command"] and entry["where"].endswith(f"Gemma4.md:{line - 3}")
    assert entry["basis"].startswith("Google/Gemma4.md is written for")
    keys = {u["key"]: u for u in entry["uses"] if u["kind"] == "key"}
    assert set(keys) == {"model", "num_speculative_tokens"}
    assert all(k["accepted"] and k["accepted"][-1][1] == history.releases[-1] for k in keys.values())
    # the whole command: the newest run of releases with every option and key, as the history reads them
    assert entry["newest"] == history.releases[-1] and entry["oldest"]


def test_a_removed_option_on_stdin_fails_with_vllm_s_story(history):
    code, body, _ = check("--json", "-", stdin="vllm serve Qwen/Qwen3-0.6B --swap-space 4\n")
    assert code == 1
    [entry] = body
    swap = _use(entry, "--swap-space")
    removed = history.flags["--swap-space"]["removed"]
    assert swap["accepted"][-1][1] == history.releases[history.releases.index(removed) - 1]
    assert f"removed in vLLM {removed}" in next(iter(swap["why"].values()))
    code, body, _ = check("--json", "--version", swap["accepted"][-1][1], "vllm serve Qwen/Qwen3-0.6B --swap-space 4")
    assert code == 0 and body[0]["parses_on"] == {swap["accepted"][-1][1]: True}


def test_a_value_the_release_lacks_and_one_that_depends_on_the_model(history):
    spec = json.dumps({"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 3})
    code, body, _ = check("--json", f"vllm serve org/model --load-format no_such_format --speculative-config '{spec}'")
    assert code == 1
    entry = body[0]
    assert _use(entry, "--load-format no_such_format")["accepted"] == []
    method = _use(entry, "--speculative-config `method: eagle3`")
    assert method["accepted"] and method["model_dependent"]  # known to the parser; the draft decides: runs
    code, text, _ = check(f"vllm serve org/model --speculative-config '{spec}'", "--version", history.releases[-1])
    assert code == 0 and "depends on the model" in text


def test_the_matrix_s_verdicts_for_the_exact_command(tmp_path):
    from driftmatrix.publisher import matrix_json, public
    from driftmatrix.publisher.command_view import views_of
    from driftmatrix.publisher.results import load

    site = REPO / "tests" / "fixtures" / "site"  # real records of a CPU run (tests/fixtures/site/regenerate.sh)
    commands = views_of(public.public_results(load(site / "snippets.json", [site / "outcomes-cpu-parse.jsonl"])))
    (tmp_path / "matrix.json").write_text(json.dumps(matrix_json.build(commands)))
    view = next(v for v in commands if v.snippet.kind == "serve" and v.outcomes)
    code, body, err = check(
        "--json", "--matrix", str(tmp_path / "matrix.json"), shell_text(view.snippet.argv, view.snippet.env)
    )
    assert code in (0, 1), err
    [entry] = body
    assert entry["snippet_id"] == view.id  # the same command read the same: the matrix's own id
    [recorded] = entry["recorded"]
    assert recorded["judgement"] == view.worst.kind
    assert {c["target"]: c["status"] for c in recorded["cells"]} == {k: o.verdict for k, o in view.outcomes.items()}


def test_inputs_that_cannot_be_read(tmp_path):
    code, _, err = check(str(tmp_path / "missing.md") + ":3")
    assert code == 2 and "no such page" in err
    code, _, err = check("echo hello")
    assert code == 2 and "no vllm command" in err
    code, text, _ = check("--version", "0.1.0", "vllm serve m --max-model-len 8")
    assert code == 2 and "cannot say" in text


def test_run_on_a_real_build_through_the_parse_tier(history):
    """--run: the CPU build's own parser agrees with what the history said, and its error is the evidence."""
    code, body, err = check(
        "--json", "--run", "stable", "vllm serve Qwen/Qwen3-0.6B --max-model-len 512 --swap-space 4"
    )
    assert code == 1, err[-2000:]
    [entry] = body
    [ran] = entry["ran"]
    assert (ran["target"], ran["verdict"], ran["stage"]) == ("stable", "FAIL", "parse")
    assert "unrecognized arguments: --swap-space" in ran["reason"]
    assert entry["parses_on"] == {history.releases[-1]: False}  # asked: today's stable, the history's newest


def test_a_parser_name_vllm_removed(history):
    """The 0.20.1 docs' tool calling page: `--tool-call-parser minimax` (docs/features/tool_calling.md:325)."""
    command = "vllm serve MiniMaxAI/MiniMax-M1-40k --enable-auto-tool-choice --tool-call-parser minimax"
    record = history.values["--tool-call-parser"]["values"]["minimax"]
    assert record["removed"]  # the history read it out of a later release's registry
    code, body, _ = check("--json", "--version", "0.20.1", "--version", history.releases[-1], command)
    assert code == 1
    parser = _use(body[0], "--tool-call-parser minimax")
    assert parser["on"] == {"0.20.1": True, history.releases[-1]: False}
    assert (
        f"was removed from the {history.values['--tool-call-parser']['domain']} in vLLM {record['removed']}"
        in parser["why"][history.releases[-1]]
    )


def test_a_config_key_vllm_moved_on_a_recipe_page(corpus, history):
    """MiniMax-M2's recipe gives `pass_config.fuse_minimax_qk_norm`, which vLLM deprecated (it now fuses by
    itself) and then removed. The page states no version: it is written for today's stable, which lacks the
    key — a failure for the page; asked about an older release too, some take it and the newest does not."""
    page = corpus / "recipes" / "8959cf6" / "MiniMax" / "MiniMax-M2.md"
    line = next(i for i, ln in enumerate(page.read_text().splitlines(), 1) if "fuse_minimax_qk_norm" in ln)
    docs = ["--docs", str(corpus / "recipes" / "8959cf6")]
    key = history.keys["--compilation-config"]["keys"]["pass_config.fuse_minimax_qk_norm"]
    code, body, _ = check("--json", f"{page}:{line}", *docs)
    assert code == 1 and body[0]["failed"] is True and body[0]["asked"] == [history.releases[-1]]
    code, body, _ = check(
        "--json", f"{page}:{line}", *docs, "--version", key["added"], "--version", history.releases[-1]
    )
    use = _use(body[0], "--compilation-config key `pass_config.fuse_minimax_qk_norm`")
    assert use["on"] == {key["added"]: True, history.releases[-1]: False}
    code, body, _ = check("--json", f"{page}:{line}", *docs, "--version", history.releases[-1])
    assert code == 1
    why = _use(body[0], "--compilation-config key `pass_config.fuse_minimax_qk_norm`")["why"][history.releases[-1]]
    assert f"in vLLM {key['removed']}" in why and key["deprecation"] in why  # vLLM's own words


def test_a_value_that_depends_on_the_model_from_the_docs(corpus, history):
    page = corpus / "vllm-docs" / "0.33.0" / "docs" / "features" / "speculative_decoding" / "speculators.md"
    line = next(i for i, ln in enumerate(page.read_text().splitlines(), 1) if '"method": "eagle3"' in ln)
    code, body, _ = check("--json", f"{page}:{line}")
    assert code == 0
    method = _use(body[0], "--speculative-config `method: eagle3`")
    assert all(method["on"].values()) and method["model_dependent"]


def test_a_name_no_release_has_gets_the_nearest_name():
    """Issue 46, point 2: an unknown option, value and key each get the nearest name the release asked
    has — in the text a reader sees and in the JSON (per release that rejects it)."""
    spec = '{"model": "org/draft", "num_spec_tokens": 3}'
    command = f"vllm serve m --tool-call-parser-plugin x --load-format safetensor --speculative-config '{spec}'"
    code, out, err = check("--version", "0.20.1", command)
    assert code == 1, err
    assert (
        "0.20.1: --tool-call-parser-plugin is not an option of any vLLM release from 0.6.0 to " in out
        and "; did you mean --tool-parser-plugin?" in out
    )
    assert "did you mean `safetensors`?" in out and "did you mean `num_speculative_tokens`?" in out
    code, body, _ = check("--json", "--version", "0.20.1", "vllm serve m --tool-call-parser-plugin x --xyzzy")
    [entry] = body
    assert _use(entry, "--tool-call-parser-plugin")["nearest"] == {"0.20.1": ["--tool-parser-plugin"]}
    assert _use(entry, "--xyzzy")["nearest"] == {} and "did you mean" not in _use(entry, "--xyzzy")["why"]["0.20.1"]
