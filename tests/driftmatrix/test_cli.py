import json
import shutil
import subprocess
import sys


def run(*args, cwd=None):
    exe = shutil.which("driftmatrix") or None
    cmd = [exe] if exe else [sys.executable, "-m", "driftmatrix.cli"]
    return subprocess.run(
        [*cmd, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"},
    )


def test_main_job_on_the_embedded_sample(tmp_path):
    out = tmp_path / "out" / "snippets.json"
    proc = run("extract", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "embedded sample docs" in proc.stderr
    for header in ("corpus", "snippets", "serve", "docker", "python", "recipe", "with spec config", "runnable"):
        assert header in proc.stdout
    assert "not runnable, by reason" in proc.stdout and "placeholder" in proc.stdout
    data = json.loads(out.read_text())
    gemma = [
        s
        for s in data["snippets"]
        if s["model"] == "google/gemma-4-E2B-it"
        and s["speculative_config"] == {"model": "google/gemma-4-E2B-it-assistant", "num_speculative_tokens": 4}
    ]
    assert gemma and gemma[0]["sources"][0]["file"] == "docs/speculative_decoding.md"


def test_summary_counts_match_the_catalog(tmp_path, corpus):
    out = tmp_path / "s.json"
    proc = run("extract", str(corpus / "recipes" / "8959cf6"), "-o", str(out), "-q")
    assert proc.returncode == 0
    data = json.loads(out.read_text())
    total = len(data["snippets"])
    assert f"driftmatrix catalog: {total} snippets" in proc.stdout
    spec = sum(1 for s in data["snippets"] if s["speculative_config"] is not None)
    row = next(line for line in proc.stdout.splitlines() if line.startswith("│ recipes"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[1] == str(total) and cells[6] == str(spec)
