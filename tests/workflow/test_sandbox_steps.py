"""Fail closed where code from the docs runs (issue 30, item 7): in the scheduled workflow and the
docs-PR gate template, every step that runs code from the docs or a model repository has
DRIFTMATRIX_SANDBOX=required and holds no secret, and an earlier step of its job installs
bubblewrap, lets it make user namespaces under Ubuntu 24.04's AppArmor restriction (a profile for
/usr/bin/bwrap only, never the restriction turned off) and fails the job where it still cannot.

The steps are read with GitHub's own workflow parser (tests/workflow/steps.mjs), and the sandbox
step's script is run with fakes for sudo, apt-get, apparmor_parser and bwrap on the hosts it
meets: GitHub's ubuntu-24.04, self-hosted Ubuntu and Debian, with and without sudo."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STEPS = REPO / "tests" / "workflow" / "steps.mjs"
SCHEDULED = REPO / ".github" / "workflows" / "driftmatrix.yml"
GATE = REPO / "workflow-templates" / "driftmatrix-docs-gate.yml"
WORKFLOWS = [SCHEDULED, GATE]

DOCS_CODE = {
    "run": "starts `vllm serve` and the parse/config helper on the docs' commands (models' remote code); "
    "not with --fetch-only, which only downloads",
    "gate": "the parse and config tiers of `run` on a docs change; not with --mode head, which reads a vLLM "
    "tree's sources statically (ast) and runs nothing",
    "pipeline": "extract -> run -> publish",
    "standin": "builds a stand-in model with a target's transformers from a model's configuration",
    "check": "reads the option history (no vLLM); with --run, the tiers of `run` on the command",
}
NO_DOCS_CODE = {
    "extract": "reads the docs as text",
    "sandbox": "says whether the sandbox works here (runs `true` in it)",
    "resolve": "asks the package index for versions",
    "plan": "compares the catalog with the previous outcomes",
    "state": "git on the state branch",
    "ci": "the workflow's inputs and runner choice",
    "publish": "writes the site from outcomes (text, escaped)",
    "annotate": "edits docs as text",
    "pr": "git and GitHub's API",
    "fixes": "fix candidates from outcomes and the option history",
    "merge": "joins outcome files",
    "history": "reads vLLM sdists statically (ast)",
}
"""Every `driftmatrix` subcommand, decided: one that runs code from the docs needs the sandbox."""

SANDBOX_STEP_NAME = "Sandbox for code from the docs"
PROFILE = [
    "abi <abi/4.0>,",
    "include <tunables/global>",
    "profile bwrap /usr/bin/bwrap flags=(unconfined) {",
    "userns,",
    "}",
]
USERNS_RESTRICTION = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|(^|_)KEY($|_)|AUTH", re.I)


def parsed(path: Path) -> dict:
    if not (REPO / ".tools" / "node_modules" / "@actions" / "workflow-parser").exists():
        pytest.fail("@actions/workflow-parser is missing: run tests/install_tools.sh (the README's test command does)")
    out = subprocess.run(["node", str(STEPS), str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["errors"] == []
    return doc


_CACHE: dict[Path, dict] = {}


def workflow(path: Path) -> dict:
    if path not in _CACHE:
        _CACHE[path] = parsed(path)
    return _CACHE[path]


# ---- which steps run driftmatrix, and with which subcommand ----

_SEPARATORS = re.compile(r"\|\||&&|[;|&\n()`]")
_ALIAS = re.compile(r"(?<![\w$])(\w+)=([\"']?)(?:[\w./~-]*/)?driftmatrix\2(?=[\s;]|$)")


def invocations(script: str | None) -> list[tuple[str, list[str]]]:
    """(subcommand, its arguments) for every `driftmatrix` a script runs: the console script by any
    path (`.venv/bin/driftmatrix`), `python -m driftmatrix[.cli]`, or a variable holding it (`$dm`)."""
    if not script:
        return []
    text = re.sub(r"\\\n", " ", script)
    aliases = [m.group(1) for m in _ALIAS.finditer(text)]
    prog = [r"(?<![\w./$-])(?:[\w./~-]*/)?driftmatrix(?![\w.@/-])", r"\bpython3?\s+-m\s+driftmatrix(?:\.cli)?(?![\w.])"]
    prog += [rf"\$\{{?{re.escape(a)}\}}?(?!\w)" for a in aliases]
    found = []
    for m in re.finditer("|".join(f"(?:{p})" for p in prog), text):
        if re.search(r"(?<![\w$])\w+=[\"']?$", text[: m.start()]):
            continue  # `dm=.venv/bin/driftmatrix`: an alias being set, not a run
        rest = _SEPARATORS.split(text[m.end() :], maxsplit=1)[0].split()
        sub = next((w for w in rest if not w.startswith("-")), None)
        if sub is not None:
            found.append((sub, rest))
    return found


def runs_docs_code(step: dict) -> bool:
    return any(
        sub in DOCS_CODE and not (sub == "run" and "--fetch-only" in args) and not _head_gate(sub, args)
        for sub, args in invocations(step.get("run"))
    )


def _head_gate(sub: str, args: list[str]) -> bool:
    """`driftmatrix gate --mode head`: nothing of the change runs (driftmatrix/gate_head.py)."""
    return sub == "gate" and (
        "--mode=head" in args or any(a == "--mode" and b == "head" for a, b in zip(args, args[1:]))
    )


def effective_env(doc: dict, job: dict, step: dict) -> dict:
    return {**doc["env"], **job["env"], **step["env"]}


def docs_code_steps(path: Path) -> list[tuple[dict, dict, int]]:
    doc = workflow(path)
    return [(job, step, i) for job in doc["jobs"] for i, step in enumerate(job["steps"]) if runs_docs_code(step)]


def profile(script: str) -> list[str] | None:
    """The AppArmor profile a script writes with `tee /etc/apparmor.d/bwrap <<'WORD'`, line by line."""
    m = re.search(r"tee /etc/apparmor\.d/bwrap\b[^\n]*<<-?'?(\w+)'?[^\n]*\n(.*?)^\1$", script, re.S | re.M)
    return [line.strip() for line in m.group(2).splitlines() if line.strip()] if m else None


def is_sandbox_step(step: dict) -> bool:
    """Installs Debian's bubblewrap, loads the bwrap-only AppArmor profile where Ubuntu restricts
    user namespaces, and fails with an ::error:: when bwrap still cannot make namespaces."""
    script = step.get("run") or ""
    return bool(
        re.search(r"apt-get install\b[^\n]*\bbubblewrap\b", script)
        and profile(script) == PROFILE
        and re.search(r"tee /etc/apparmor\.d/bwrap\b", script)
        and re.search(r"apparmor_parser -r /etc/apparmor\.d/bwrap\b", script)
        and USERNS_RESTRICTION in script
        and re.search(r"bwrap --unshare-all --die-with-parent --ro-bind / /", script)
        and "::error::" in script
        and re.search(r"\bexit 1\b", script)
    )


# ---- the rules ----


def test_every_subcommand_is_decided():
    """A new subcommand must be put in DOCS_CODE or NO_DOCS_CODE before the workflow may use it."""
    out = subprocess.run(
        [sys.executable, "-m", "driftmatrix.cli", "--help"], capture_output=True, text=True, check=True, cwd=REPO
    )
    choices = set(re.search(r"^\s+\{([\w,-]+)\}$", out.stdout, re.M).group(1).split(","))
    assert set(DOCS_CODE).isdisjoint(NO_DOCS_CODE)
    assert set(DOCS_CODE) | set(NO_DOCS_CODE) == choices


def test_the_scanner_reads_the_workflows():
    """Every `driftmatrix` the workflows run is found with a real subcommand, and the steps that run
    code from the docs are (at least) the known ones."""
    found = {}
    for path in WORKFLOWS:
        for job in workflow(path)["jobs"]:
            for step in job["steps"]:
                for sub, _ in invocations(step.get("run")):
                    assert sub in DOCS_CODE or sub in NO_DOCS_CODE, (path.name, job["id"], step.get("name"), sub)
                    found.setdefault(sub, 0)
                    found[sub] += 1
    assert {"run", "gate", "merge", "fixes", "publish", "pr", "extract", "plan", "state", "ci"} <= set(found)
    assert found["run"] == 4  # fetch + run in `run` and in `verify-fixes`
    names = {(p.name, job["id"], step["name"]) for p in WORKFLOWS for job, step, _ in docs_code_steps(p)}
    assert {
        (
            "driftmatrix.yml",
            "run",
            "${{ format('Run {0} (exactly the plan''s arguments; no token, vLLM sandboxed)', matrix.entry) }}",
        ),
        ("driftmatrix.yml", "verify-fixes", "Run them as deep as their originals (no token, vLLM sandboxed)"),
        ("driftmatrix-docs-gate.yml", "gate", "Check the commands on the changed pages"),
    } <= names
    assert invocations("dm=.venv/bin/driftmatrix\n$dm merge a -o b\n${dm} run x --fetch-only") == [
        ("merge", ["merge", "a", "-o", "b"]),
        ("run", ["run", "x", "--fetch-only"]),
    ]
    assert (
        invocations(
            'pip install "$DRIFTMATRIX"; git clone https://github.com/o/driftmatrix@abc; '
            "ls ~/.cache/driftmatrix/x driftmatrix-state"
        )
        == []
    )
    assert invocations("python -m driftmatrix.cli gate --repo r") == [("gate", ["gate", "--repo", "r"])]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_docs_code_runs_only_with_the_sandbox_required(path):
    steps = docs_code_steps(path)
    assert steps, f"{path.name}: no step runs code from the docs? (the scanner is broken)"
    doc = workflow(path)
    for job, step, _ in steps:
        env = effective_env(doc, job, step)
        assert env.get("DRIFTMATRIX_SANDBOX") == "required", (
            f"{path.name}/{job['id']}: {step['name']!r} runs code from the docs without DRIFTMATRIX_SANDBOX=required"
        )
    for job in doc["jobs"]:  # and no script turns it off for later steps ($GITHUB_ENV) or this one
        for step in job["steps"]:
            assert "DRIFTMATRIX_SANDBOX" not in (step.get("run") or ""), (path.name, job["id"], step.get("name"))


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_sandbox_is_set_up_before_docs_code(path):
    for job, step, index in docs_code_steps(path):
        before = [s for s in job["steps"][:index] if is_sandbox_step(s)]
        assert before, (
            f"{path.name}/{job['id']}: no earlier step installs bubblewrap and loads the AppArmor "
            f"profile before {step['name']!r}"
        )
        for sandbox in before:  # it must be able to fail the job, and run whenever the docs code does
            # (the docs gate skips both, on one condition, when a change touches no docs)
            assert sandbox["if"] in ("${{ success() }}", step["if"]), (path.name, job["id"], sandbox["if"])
            assert sandbox["if"].startswith("${{ success()") and not sandbox["continue_on_error"], (
                path.name,
                job["id"],
            )


def test_the_sandbox_steps_are_one_script():
    """The same step everywhere (three jobs, two files): a fix to one is a fix to all."""
    scripts = {s["run"] for p in WORKFLOWS for job in workflow(p)["jobs"] for s in job["steps"] if is_sandbox_step(s)}
    named = {
        s["run"]
        for p in WORKFLOWS
        for job in workflow(p)["jobs"]
        for s in job["steps"]
        if (s.get("name") or "").startswith(SANDBOX_STEP_NAME)
    }
    assert len(scripts) == 1 and named == scripts


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_restriction_stays_on(path):
    """bwrap gets user namespaces through its own profile; nothing turns Ubuntu's restriction off
    or unloads AppArmor."""
    for job in workflow(path)["jobs"]:
        for step in job["steps"]:
            script = step.get("run") or ""
            assert not re.search(
                r"apparmor_restrict_unprivileged_userns\s*=|sysctl\s+(-w\s+)?kernel\.apparmor|"
                r"unprivileged_userns_clone|aa-teardown|aa-complain|aa-disable|"
                r"systemctl\s+(stop|disable)\s+apparmor|>\s*" + re.escape(USERNS_RESTRICTION),
                script,
            ), (path.name, job["id"], step.get("name"))


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_secret_where_docs_code_runs(path):
    doc = workflow(path)
    for job, step, _ in docs_code_steps(path):
        for key, value in effective_env(doc, job, step).items():
            assert not re.search(r"\bsecrets\.|\bgithub\.token\b", str(value)) and not _SECRET_NAME.search(key), (
                f"{path.name}/{job['id']}: {step['name']!r} runs code from the docs with {key}={value}"
            )


def test_secrets_only_where_no_docs_code_runs():
    """The scheduled workflow's secrets, step by step: the runner listing, the state branch, the
    model downloads (`run --fetch-only`) and the PRs; none of them runs code from the docs."""
    doc = workflow(SCHEDULED)
    assert not any(re.search(r"\bsecrets\.|\bgithub\.token\b", str(v)) for v in doc["env"].values())
    holders = set()
    for job in doc["jobs"]:
        assert not any(re.search(r"\bsecrets\.|\bgithub\.token\b", str(v)) for v in job["env"].values()), job["id"]
        for step in job["steps"]:
            secret = [k for k, v in step["env"].items() if re.search(r"\bsecrets\.|\bgithub\.token\b", str(v))]
            if secret:
                assert not runs_docs_code(step), (job["id"], step["name"], secret)
                holders.add((job["id"], tuple(sorted({sub for sub, _ in invocations(step["run"])})), tuple(secret)))
    assert holders == {
        ("extract", ("ci",), ("RUNNERS_TOKEN",)),
        ("extract", ("state",), ("GITHUB_TOKEN",)),
        ("run", ("run",), ("HF_TOKEN",)),
        ("verify-fixes", ("run",), ("HF_TOKEN",)),
        ("save-state", ("state",), ("GITHUB_TOKEN",)),
        ("pull-requests", ("pr",), ("GITHUB_TOKEN",)),
        # whether the PR token is set (`secrets.X != ''`, a boolean, never the token): the opt-in check
        ("pull-requests", (), ("HAS_TOKEN",)),
    }


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_vllm_only_through_driftmatrix(path):
    """A `vllm serve` (or `python -m vllm`) straight from a script would bypass the sandbox."""
    for job in workflow(path)["jobs"]:
        for step in job["steps"]:
            assert not re.search(r"(?<![\w/-])vllm\s+serve\b|-m\s+vllm\b", step.get("run") or ""), (
                job["id"],
                step.get("name"),
            )


# ---- the sandbox step, run on the hosts it meets ----

_STUBS = {
    # sudo: absent, asking for a password (`-n` fails), or running the command as given
    "sudo": 'echo "sudo $*" >> "$STATE/log"\n[ -e "$STATE/sudo-password" ] && exit 1\n[ "$1" = -n ] && shift\n"$@"\n',
    "apt-get": 'echo "apt-get $*" >> "$STATE/log"\n'
    'if [ "$1" = install ]; then /bin/cp "$STATE/bwrap.stub" "$STUBS/bwrap"; /bin/chmod +x "$STUBS/bwrap"; fi\n',
    "tee": 'echo "tee $*" >> "$STATE/log"\n/bin/cat > "$STATE/written"\n',
    "apparmor_parser": 'echo "apparmor_parser $*" >> "$STATE/log"\n'
    '[ "$*" = "-r /etc/apparmor.d/bwrap" ] && /bin/cp "$STATE/written" "$STATE/loaded"\n'
    '[ "$*" = "-r $STATE/distro-profile" ] && /bin/cp "$STATE/distro-profile" "$STATE/loaded"\n'
    "exit 0\n",
    "sysctl": 'echo "sysctl $*" >> "$STATE/log"\n',
}
_BWRAP = (
    'echo "bwrap $*" >> "$STATE/log"\n'
    '[ -e "$STATE/userns-ok" ] || [ -e "$STATE/loaded" ] && exit 0\n'
    'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n'
)


def sandbox_script() -> str:
    scripts = {s["run"] for p in WORKFLOWS for job in workflow(p)["jobs"] for s in job["steps"] if is_sandbox_step(s)}
    assert len(scripts) == 1, "no (or more than one) sandbox step"
    return scripts.pop()


DISTRO_PROFILES = ("/etc/apparmor.d/bwrap-userns-restrict", "/usr/share/apparmor/extra-profiles/bwrap-userns-restrict")


def host(
    tmp_path: Path,
    *,
    bwrap: str,
    restricted: bool | None,
    sudo: str,
    runner: str = "github-hosted",
    distro_profile: bool = False,
) -> tuple[int, str, list[str], Path]:
    """Run the sandbox step as GitHub runs a `shell: bash` step, on a host where bwrap is `absent`,
    `works` or `blocked` (no namespaces), `restricted` is the AppArmor sysctl (None: no such file,
    Debian), sudo is `yes`, `password` (not passwordless) or `absent`, `runner` is RUNNER_ENVIRONMENT
    and `distro_profile` says whether the distribution ships its bwrap-userns-restrict profile. PATH
    holds only the fakes; the sysctl and profile files are files of the test's."""
    stubs, state = tmp_path / "bin", tmp_path / "state"
    stubs.mkdir()
    state.mkdir()
    for name, body in _STUBS.items():
        if name == "sudo" and sudo == "absent":
            continue
        (stubs / name).write_text("#!/bin/bash\n" + body)
        (stubs / name).chmod(0o755)
    (state / "bwrap.stub").write_text("#!/bin/bash\n" + _BWRAP)
    if bwrap != "absent":
        shutil.copy(state / "bwrap.stub", stubs / "bwrap")
        (stubs / "bwrap").chmod(0o755)
    if bwrap == "works":
        (state / "userns-ok").touch()
    if sudo == "password":
        (state / "sudo-password").touch()
    sysctl = tmp_path / "apparmor_restrict_unprivileged_userns"
    if restricted is not None:
        sysctl.write_text("1\n" if restricted else "0\n")
    script = sandbox_script()
    assert USERNS_RESTRICTION in script and all(p in script for p in DISTRO_PROFILES)
    script = script.replace(USERNS_RESTRICTION, str(sysctl)).replace(DISTRO_PROFILES[0], str(state / "no-such-profile"))
    script = script.replace(DISTRO_PROFILES[1], str(state / "distro-profile"))
    if distro_profile:
        (state / "distro-profile").write_text(
            "profile bwrap /usr/bin/bwrap { userns, change_profile -> unpriv_bwrap, }\n"
        )
    (tmp_path / "step.sh").write_text(script)
    out = subprocess.run(
        [shutil.which("bash"), "--noprofile", "--norc", "-eo", "pipefail", str(tmp_path / "step.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={
            "PATH": str(stubs),
            "STATE": str(state),
            "STUBS": str(stubs),
            "HOME": str(tmp_path),
            "RUNNER_ENVIRONMENT": runner,
        },
    )
    log = (state / "log").read_text().splitlines() if (state / "log").exists() else []
    return out.returncode, out.stdout + out.stderr, log, state


def _profile(state: Path) -> list[str]:
    return [line.strip() for line in (state / "loaded").read_text().splitlines() if line.strip()]


def test_github_hosted_ubuntu_2404(tmp_path):
    """No bubblewrap, AppArmor's restriction on, passwordless sudo: installed, profile loaded, probed."""
    rc, out, log, state = host(tmp_path, bwrap="absent", restricted=True, sudo="yes")
    assert rc == 0, out
    assert "sudo -n apt-get install -y -qq --no-install-recommends bubblewrap" in log
    assert "tee /etc/apparmor.d/bwrap" in log and "apparmor_parser -r /etc/apparmor.d/bwrap" in log
    assert _profile(state) == PROFILE
    assert not any(line.startswith("sysctl") for line in log)
    assert log[-1].startswith("bwrap --unshare-all --die-with-parent --ro-bind / /")  # the last word: the probe


@pytest.mark.parametrize("sudo", ["yes", "absent"])
def test_bwrap_already_allowed(tmp_path, sudo):
    """Ubuntu with the profile loaded by the runner's admin, or a newer Ubuntu that enforces its own
    bwrap profile: nothing installed or loaded (a second profile for /usr/bin/bwrap would detach both)."""
    rc, out, log, _ = host(tmp_path, bwrap="works", restricted=True, sudo=sudo)
    assert rc == 0, out
    assert not any(line.startswith(("sudo", "apt-get", "tee", "apparmor_parser")) for line in log), log


@pytest.mark.parametrize("restricted", [None, False])
def test_self_hosted_debian(tmp_path, restricted):
    """Bubblewrap installed, no AppArmor restriction, no sudo: passes on the probe alone."""
    rc, out, log, _ = host(tmp_path, bwrap="works", restricted=restricted, sudo="absent")
    assert rc == 0, out
    assert [line.split()[0] for line in log] == ["bwrap"]


@pytest.mark.parametrize(
    "case",
    [
        dict(bwrap="absent", restricted=None, sudo="absent"),  # Debian without bubblewrap, no sudo
        dict(bwrap="absent", restricted=True, sudo="password"),  # sudo asks for a password
        dict(bwrap="blocked", restricted=True, sudo="absent"),  # Ubuntu 24.04, no sudo to load the profile
        dict(bwrap="blocked", restricted=None, sudo="yes"),  # user namespaces off some other way
        dict(bwrap="blocked", restricted=False, sudo="yes"),
    ],
    ids=["no-bwrap-no-sudo", "sudo-password", "ubuntu-no-sudo", "userns-disabled", "restriction-off-still-blocked"],
)
def test_fails_the_job_without_a_sandbox(tmp_path, case):
    rc, out, log, state = host(tmp_path, **case)
    assert rc != 0 and "::error::bubblewrap" in out, out
    assert not any(line.startswith("apparmor_parser") and "distro-profile" in line for line in log)
    if case["restricted"] is not True:  # the profile is only for Ubuntu's restriction
        assert not (state / "loaded").exists() and not any(line.startswith("tee") for line in log)
    assert not any(line.startswith("sysctl") for line in log)


@pytest.mark.parametrize("sudo", ["yes", "absent"])
def test_a_self_hosted_host_keeps_its_apparmor_profiles(tmp_path, sudo):
    """A self-hosted Ubuntu runner under the restriction: nothing is written to its AppArmor policy;
    where the distribution ships its own bwrap-userns-restrict profile it is loaded as shipped."""
    rc, out, log, state = host(tmp_path, bwrap="works", restricted=True, sudo=sudo, runner="self-hosted")
    assert rc == 0 and not any(line.startswith(("tee", "apparmor_parser")) for line in log)  # already allowed
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    rc, out, log, state = host(
        blocked, bwrap="blocked", restricted=True, sudo=sudo, runner="self-hosted", distro_profile=True
    )
    assert not any(line.startswith("tee") for line in log) and not (state / "written").exists()
    if sudo == "yes":
        assert rc == 0, out
        assert f"apparmor_parser -r {state / 'distro-profile'}" in log and "the distribution's own" in out
        assert _profile(state) == ["profile bwrap /usr/bin/bwrap { userns, change_profile -> unpriv_bwrap, }"]
    else:
        assert rc == 1 and "never writes a host's AppArmor profiles" in out and not (state / "loaded").exists()


def test_a_self_hosted_host_without_a_distribution_profile_is_refused(tmp_path):
    rc, out, log, state = host(tmp_path, bwrap="blocked", restricted=True, sudo="yes", runner="self-hosted")
    assert rc == 1 and "::error::AppArmor restricts user namespaces on this self-hosted runner" in out
    assert "bwrap-userns-restrict" in out  # what its admin can do
    assert not any(line.startswith(("tee", "apparmor_parser", "sysctl")) for line in log), log
