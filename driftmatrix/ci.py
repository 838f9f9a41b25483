"""`driftmatrix ci inputs|runner`: the scheduled workflow's decisions, made in Python where they
can be tested, and handed to the workflow as `$GITHUB_OUTPUT` lines.

- `inputs`: the dispatch inputs arrive through `env:` (never interpolated into a script) and are
  validated here; also decided here: whether this run publishes (PUBLISHING_EVENTS only — a scheduled
  run, which always runs on the default branch and whose event has no `repository` to compare with,
  or a dispatch of the default branch; never `pull_request_target`, `issue_comment` or `workflow_run`,
  which GitHub also runs with the base or default branch's ref), whether the doc-fix PRs are pushed
  (`--apply`) or only shown (dry run), and to which repositories (`vars.DRIFTMATRIX_PR_REPOS`, opt-in:
  none unless named).
- `runner`: where the run jobs go. GPU runners only when one with the labels is online, asked of
  the GitHub API (a token that may list the repository's or organisation's runners), waiting at
  most `--wait` minutes; otherwise the CPU fallback on GitHub's runners (HOSTED_RUNNER). A job sent
  to an offline self-hosted label would wait 24 hours in the queue, and with it everything that
  needs it. Self-hosted runners only for the default branch's runs (the job-level `if` of the jobs
  that run on them says so to GitHub too), and `runners`: how many take the legs, for the plan's cap.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from typing import TYPE_CHECKING

from driftmatrix.runner.outcomes.vocabulary import TIERS
from driftmatrix.runner.run.budget import GITHUB_JOB_LIMIT_H, LEG_HOURS

if TYPE_CHECKING:
    import httpx

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
PUBLISHING_EVENTS = ("schedule", "workflow_dispatch")
"""The only events whose runs publish (state, Pages, PRs, self-hosted runners), on the default branch.
The ref alone cannot tell: GitHub runs `pull_request_target` with GITHUB_REF the base branch and
`issue_comment` / `workflow_run` with the default branch, so a ref check would let those publish."""
MAX_SHARDS = 32
HOSTED_RUNNER = "ubuntu-24.04"
"""The image of every GitHub-hosted job of the scheduled workflow, named (`ubuntu-latest` moved to 26.04
in late 2026 under the sandbox step, disk figures and guide written for 24.04): the one place to change
it (the workflow's extract job names it too; tests/workflow/test_workflow.py keeps the two equal)."""
MAX_WAIT_MINUTES = 40
"""The wait for an online GPU runner stays well inside the extract job's 60-minute timeout."""


class InputError(ValueError):
    """A workflow input is not acceptable (the message names it)."""


def _flag(name: str, value: str, default: bool) -> bool:
    value = (value or "").strip().lower()
    if value == "":
        return default
    if value not in ("true", "false"):
        raise InputError(f"{name}: expected true or false, got {value!r}")
    return value == "true"


def decide_inputs(env: dict[str, str]) -> dict[str, str]:
    """The run's settings from the event and the (untrusted) dispatch inputs."""
    event = env.get("EVENT", "")
    targets = [t.strip() for t in env.get("IN_TARGETS", "").split(",") if t.strip()]
    bad = [t for t in targets if not _NAME.match(t)]
    if bad:
        raise InputError(f"targets: not target names: {bad!r}")
    tier = env.get("IN_TIER") or "probe"
    if tier not in TIERS:
        raise InputError(f"tier: one of {', '.join(TIERS)}, got {tier!r}")
    shards_text = env.get("IN_SHARDS") or ("4" if event == "workflow_dispatch" else "1")
    if not shards_text.isdigit() or not 1 <= int(shards_text) <= MAX_SHARDS:
        raise InputError(f"shards: a whole number from 1 to {MAX_SHARDS}, got {shards_text!r}")
    leg_text = (env.get("LEG_HOURS") or "").strip() or f"{LEG_HOURS:g}"
    try:
        leg_hours = float(leg_text)
    except ValueError:
        leg_hours = -1.0
    if not 0 < leg_hours <= GITHUB_JOB_LIMIT_H - 0.5:
        raise InputError(
            f"vars.DRIFTMATRIX_LEG_HOURS: hours above 0 and at most {GITHUB_JOB_LIMIT_H - 0.5:g} "
            f"(GitHub ends a job at {GITHUB_JOB_LIMIT_H:g} h), got {leg_text!r}"
        )
    # a scheduled day checks every command at the config tier and the deeper tier on the share that fits
    daily = "config" if event == "schedule" and TIERS.index(tier) > TIERS.index("config") else ""
    stable = env.get("STABLE_PIN", "").strip()
    if stable and not re.fullmatch(r"[0-9]+(\.[0-9]+){1,3}([a-z0-9.+-]*)", stable):
        raise InputError(f"vars.DRIFTMATRIX_STABLE: not a version, got {stable!r}")
    default_branch = env.get("DEFAULT_BRANCH", "")
    on_default = event == "schedule" or (
        event in PUBLISHING_EVENTS and bool(default_branch) and env.get("REF") == f"refs/heads/{default_branch}"
    )
    # self-hosted runners take the default branch's runs only: a run of another branch's workflow
    # file would leave whatever it likes on a runner that later scheduled runs trust
    wanted = _flag("gpu", env.get("IN_GPU", ""), default=True) if event == "workflow_dispatch" else True
    gpu = on_default and wanted
    apply_prs = _flag("apply_prs", env.get("IN_APPLY_PRS", ""), default=False)
    repos = pr_repos(env.get("PR_REPOS", ""))
    return {
        "targets": ",".join(targets),
        "tier": tier,
        "shards": str(int(shards_text)),
        "stable": stable,
        "leg_hours": f"{leg_hours:g}",
        "daily_tier": daily,
        "gpu": str(gpu).lower(),
        "publish": str(on_default).lower(),
        "apply_prs": str(on_default and (event == "schedule" or apply_prs)).lower(),
        # the PR job's matrix: one empty entry when none is named (an empty matrix fails a job), which
        # says so in its summary and succeeds
        "pr_repos": json.dumps(repos or [""]),
    }


def pr_repos(text: str) -> list[str]:
    """`vars.DRIFTMATRIX_PR_REPOS`: the repositories the doc-fix PRs go to (`owner/name`, separated by
    commas or spaces), none when unset: opening pull requests upstream is opt-in."""
    names = [n for n in re.split(r"[\s,]+", text.strip()) if n]
    bad = [n for n in names if not _REPO.match(n) or any(part in (".", "..") for part in n.split("/"))]
    if bad:
        raise InputError(f"vars.DRIFTMATRIX_PR_REPOS: not owner/name repositories: {bad!r}")
    return list(dict.fromkeys(names))


def labelled_runners(repo: str, labels: list[str], token: str, api: str, client: httpx.Client) -> list[dict]:
    """The runners carrying every label, as the API lists them (the repository's, else its organisation's)."""
    owner = repo.split("/")[0]
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
    }
    for path in (f"/repos/{repo}/actions/runners", f"/orgs/{owner}/actions/runners"):
        found: list[dict] = []
        for page in range(1, 11):  # 100 per page, up to 1,000 runners
            r = client.get(f"{api}{path}", params={"per_page": 100, "page": page}, headers=headers)
            if r.status_code != 200:
                break  # 403/404: no access to that level; the other may answer
            runners = r.json().get("runners", [])
            found += [
                x
                for x in runners
                if all(label.lower() in {n.get("name", "").lower() for n in x.get("labels", [])} for label in labels)
            ]
            if len(runners) < 100:
                break
        if found:
            return found
    return []


def runner_count(env: dict[str, str], registered: int) -> str:
    """How many self-hosted runners take the legs: `vars.DRIFTMATRIX_GPU_RUNNERS`, else those registered
    with the labels (online or not: a runner back within the day still takes its share)."""
    given = (env.get("GPU_RUNNERS") or "").strip()
    if not given:
        return str(max(registered, 1))
    if not given.isdigit() or int(given) < 1:
        raise InputError(f"vars.DRIFTMATRIX_GPU_RUNNERS: a whole number of runners from 1, got {given!r}")
    return str(int(given))


def choose_runner(env: dict[str, str], wait_s: float, poll_s: float = 30.0, api: str | None = None) -> dict[str, str]:
    """runs-on for the run jobs, its targets file, how many runners take the legs, and why (for the summary)."""
    labels = [x.strip() for x in env.get("GPU_LABELS", "self-hosted,gpu").split(",") if x.strip()]
    hosted = json.dumps(HOSTED_RUNNER)
    cpu = {
        "runner": hosted,
        "hosted": hosted,
        "mode": "cpu",
        "runners": "",
        "targets_file": "runner/data/targets-ci-cpu.toml",
    }
    if env.get("GPU_WANTED", "true") != "true":
        return {**cpu, "why": "GPU runners not asked for (or not the default branch): CPU builds with stand-in models"}
    token = env.get("RUNNERS_TOKEN", "")
    if not token:
        return {**cpu, "why": "no DRIFTMATRIX_RUNNERS_TOKEN to see whether a GPU runner is online: CPU fallback"}
    deadline = time.monotonic() + wait_s
    import httpx  # only here: `driftmatrix check` builds this parser too, and must start fast

    with httpx.Client(timeout=30) as client:
        while True:
            try:
                found = labelled_runners(
                    env["REPO"], labels, token, api or env.get("API", "https://api.github.com"), client
                )
            except (httpx.HTTPError, ValueError):
                found = []
            online = [x for x in found if x.get("status") == "online"]
            if online:
                count = runner_count(env, len(found))
                return {
                    "runner": json.dumps(labels),
                    "hosted": hosted,
                    "mode": "gpu",
                    "runners": count,
                    "targets_file": "runner/data/targets-gpu.toml",
                    "why": f"GPU runner {online[0].get('name') or '?'} is online ({', '.join(labels)}); "
                    f"legs planned for {count} runner(s)",
                }
            if time.monotonic() + poll_s > deadline:
                minutes = round(wait_s / 60, 1)
                return {
                    **cpu,
                    "why": f"no online runner with labels {', '.join(labels)} within {minutes} min: CPU fallback",
                }
            time.sleep(poll_s)


def _emit(values: dict[str, str]) -> None:
    for key, value in values.items():
        print(f"{key}={value}")


def cmd_ci(args: argparse.Namespace) -> int:
    from driftmatrix.common.inert import workflow_command
    from driftmatrix.common.inert_stdio import emit
    from driftmatrix.common.step_summary import escape, write

    env = dict(os.environ)
    try:
        if args.action == "inputs":
            _emit(decide_inputs(env))
            return 0
        wait = min(float(env.get("WAIT_MINUTES") or 15), MAX_WAIT_MINUTES) * 60
        choice = choose_runner(env, wait, poll_s=args.poll)
    except (InputError, ValueError) as err:  # the inputs are anyone's: escaped as the command's data
        emit(workflow_command("error", f"driftmatrix ci {args.action}: {err}"))
        return 2
    if choice["mode"] == "cpu" and env.get("GPU_WANTED", "true") == "true":
        emit(workflow_command("warning", choice["why"]))  # a runner's name is the API's text
    write(f"**Runners**: {escape(choice['why'])}", full="this step's log")
    _emit({k: v for k, v in choice.items() if k != "why"})
    return 0


def add_parser(sub) -> None:
    ci = sub.add_parser("ci", help="the scheduled workflow's decisions (inputs, runners), as $GITHUB_OUTPUT lines")
    ci.add_argument("action", choices=["inputs", "runner"])
    ci.add_argument("--poll", type=float, default=30.0, help="seconds between runner checks (default: %(default)s)")
    ci.set_defaults(func=cmd_ci)
