"""The driftmatrix side of `vllm_helper.py`: one long-lived helper per target env, a fork server that
answers each command in a fresh child of its own (runner/intarget/fork_server.py): whatever a command
loads dies with its child, and no command pays vLLM's import again.

Every answer is read within a deadline and a size (runner/isolation/sandbox/files.py): a half line, a flood
or silence from the helper is a HelperError for that request (ERROR, ours), and the helper is
restarted; it can never hold the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from driftmatrix import runner
from driftmatrix.runner.isolation import sandbox, trust
from driftmatrix.runner.isolation.env_policy import runner_env, without_secrets
from driftmatrix.runner.isolation.sandbox import detection, limits, spawner
from driftmatrix.runner.isolation.sandbox.files import LineReader, ProtocolError, open_new, read_tail
from driftmatrix.runner.isolation.sandbox.launch import Launch
from driftmatrix.runner.settings import (
    HELPER_ANSWER_S,
    HELPER_IMPORT_S,
    HELPER_TEXT_CHARS,
    HELPER_WARNINGS_BYTES,
    HELPER_WARNINGS_MAX,
)

HELPER = runner.INTARGET / "vllm_helper.py"
DECLARED_HELPER = HELPER.with_name("declared_device.py")
"""The same helper over a declared CUDA device: a CUDA build's config tier without a device."""


@dataclass
class HelperAnswer:
    """The helper's answer to one parse (or parse + config) request, as a typed record (a request
    for another `vllm` subcommand is answered at the parse stage only)."""

    result: Literal["ok", "failed", "skipped"]
    """`ok`: vLLM accepted it; `failed`: vLLM raised (see `error`); `skipped`: the helper could not
    check it here (e.g. a CUDA build's engine config on a machine without an accelerator, or a
    subcommand this build's CLI does not have or cannot load)."""
    stage: str = "parse"
    """The tier it got to: `parse` or `config`."""
    error: dict = field(default_factory=dict)
    """`{type, message, location: {file, line, function}, traceback}` when it failed."""
    skip: str | None = None
    """Why it was skipped."""
    warnings: list[dict] = field(default_factory=list)
    """vLLM WARNING records while parsing/configuring: `{file, line, message}`."""
    effective_config: dict = field(default_factory=dict)
    """Resolved engine settings (config tier)."""
    no_device: bool = False
    """A CUDA build without a device was asked for its engine config: ask the declared-device helper."""
    depth: str | None = None
    """How far the config tier got on a declared device ("config built with a declared CUDA device …")."""
    import_probes: list[str] = field(default_factory=list)
    """Device queries vLLM's modules made at import in the declared-device helper (answered: no device)."""
    foreign: list[str] = field(default_factory=list)
    """The code options (runner/isolation/trust.py) the parsed namespace holds, however the argv spelled them."""
    validated: bool = True
    """False: the command's process stopped after argparse (not known to be inert, or `foreign`, without
    a sandbox: nothing else ran)."""
    warnings_left_out: int = 0
    """Warnings past HELPER_WARNINGS_MAX or HELPER_WARNINGS_BYTES: counted, not kept."""

    @classmethod
    def from_json(cls, data: dict) -> HelperAnswer:
        ok = data.get("ok")
        warnings, left_out = _bounded(data.get("warnings") if isinstance(data.get("warnings"), list) else [])
        return cls(
            "skipped" if ok is None else "ok" if ok else "failed",
            data.get("stage") or "parse",
            _clipped(data.get("error") or {}),
            data.get("skip"),
            warnings,
            dict(data.get("effective_config") or {}),
            bool(data.get("no_device")),
            data.get("depth"),
            [str(p) for p in data.get("import_probes") or []],
            trust.from_namespace([str(d) for d in data.get("foreign") or []]),
            data.get("validated", True) is not False,
            left_out,
        )


def _bounded(warnings: list) -> tuple[list[dict], int]:
    """(the warnings kept, how many were left out): at most HELPER_WARNINGS_MAX of them, taking at most
    HELPER_WARNINGS_BYTES as JSON together — what one answer may add to an outcome record."""
    kept, size = [], 0
    for warning in warnings:
        if len(kept) == HELPER_WARNINGS_MAX:
            break
        cost = len(json.dumps(warning))
        if isinstance(warning, dict) and size + cost <= HELPER_WARNINGS_BYTES:
            kept.append(warning)
            size += cost
    return kept, len(warnings) - len(kept)


def _clipped(error: dict) -> dict:
    """The error, its message cut to its first HELPER_TEXT_CHARS and its traceback to its last (where it
    was raised)."""
    if not isinstance(error, dict):
        return {}
    clipped = dict(error)
    if isinstance(clipped.get("message"), str):
        clipped["message"] = clipped["message"][:HELPER_TEXT_CHARS]
    if isinstance(clipped.get("traceback"), str):
        clipped["traceback"] = clipped["traceback"][-HELPER_TEXT_CHARS:]
    return clipped


class HelperError(RuntimeError):
    """The helper died or stopped answering: our side's fault (ERROR), with its stderr tail."""


class CommandCrashed(HelperError):
    """The command's own process ended without an answer (the fork server is fine: not restarted)."""


class LogPastLimit(HelperError):
    """The helper's log grew past the sandbox's log limit while it answered (`hit`: the limit event)."""

    def __init__(self, hit: dict):
        super().__init__(f"its log grew past {hit['max']} MiB")
        self.hit = hit


class Helper:
    """One helper process at a time (restarted when it dies). `launcher` makes a fresh Launch for each
    start (runner/sandbox: the sandbox's argv, env, handed-in descriptors); `env` is its whole
    environment — nothing of ours is added."""

    def __init__(
        self,
        launcher: Callable[[], Launch],
        log_path: Path,
        import_timeout: float = HELPER_IMPORT_S,
        attempts: int = 2,
    ):
        self.launcher, self.log_path, self.attempts = launcher, log_path, attempts
        """A helper that died is started again once (attempts=2)."""
        self.options: list[str] | None = None
        """The release's `vllm serve` option strings, as its parser has them (None until it started)."""
        self.allow_abbrev = True
        self.import_timeout = import_timeout
        self.proc: subprocess.Popen | None = None
        self.launch: Launch | None = None
        self.import_s: float | None = None
        self.homes: dict[str, str] = {}
        self.lock = threading.Lock()
        self.sandbox_events: list[dict] = []
        """What the sandbox's init reported when the last helper process ended (a limit hit)."""
        self._seq = 0
        self._err: int | None = None
        self._reader: LineReader | None = None

    def _start(self) -> None:
        if self._err is None:
            self._err = open_new(self.log_path)
        self.launch = launch = self.launcher()
        self.proc = spawner.spawn(  # forked by a thread that outlives this one: it dies with the runner only
            launch.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=launch.env,
            start_new_session=True,
            pass_fds=launch.pass_fds,
            preexec_fn=launch.preexec,
        )
        launch.started()
        self._reader = LineReader(self.proc.stdout.fileno())
        hello = self._read(self.import_timeout)
        if not hello.get("ready"):
            err = hello.get("error") or {}
            self.close()
            raise HelperError(f"vLLM's parser could not be built: {err.get('type')}: {err.get('message')}")
        self.import_s = hello.get("import_s")
        self.homes = dict(hello.get("homes") or {})
        """Where this release keeps each name the helper uses (runner/intarget/vllm_symbols.py)."""
        self.options = list(hello["options"]) if isinstance(hello.get("options"), list) else None
        self.allow_abbrev = hello.get("allow_abbrev") is not False

    def start(self) -> None:
        """Start the helper now unless it runs (HelperError when vLLM's parser cannot be built)."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                try:
                    self._start()
                except (HelperError, OSError) as err:
                    self.close()
                    raise HelperError(str(err)) from None

    def kill(self) -> None:
        """Stop the helper at once (an interrupted run): its whole process group, the sandbox with it
        (bubblewrap's --die-with-parent), whatever request it is busy with."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()

    def _read(self, timeout: float) -> dict:
        assert self.proc and self._reader
        try:
            line = self._reader.read_line(timeout)
        except ProtocolError as err:
            raise HelperError(f"helper gave no answer: {err}") from None
        except EOFError:
            raise HelperError(f"helper exited ({self.proc.poll()}); stderr: {self.stderr_tail()}") from None
        try:
            answer = json.loads(line)
        except ValueError:
            raise HelperError(f"helper sent something that is not an answer: {line[:200]!r}") from None
        if not isinstance(answer, dict):
            raise HelperError(f"helper sent something that is not an answer: {line[:200]!r}")
        return answer

    def _log_past_limit(self) -> dict | None:
        """The helper's log as the kernel counts it (its size or its allocated blocks), measured right
        after each answer: the command that flooded it gets the ERROR — the sandbox's own measure runs
        on a tick, which a quick flood and answer can beat (a limit event as the init reports one)."""
        cap = getattr(getattr(self.launch, "limits", None), "log_mib", None)
        try:
            st = os.stat(self.log_path)
        except OSError:
            return None
        held = max(st.st_size, st.st_blocks * 512)
        return {"limit": "log_mib", "max": cap, "value": held // 2**20} if cap and held > cap * 2**20 else None

    def stderr_tail(self, n: int = 8) -> str:
        try:
            return "\n".join(read_tail(self.log_path, 64 * 1024).decode(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def ask(
        self,
        argv: list[str],
        tier: str,
        timeout: float = HELPER_ANSWER_S,
        env: dict[str, str] | None = None,
        subcommand: list[str] | None = None,
        argparse_only: bool = False,
        warm: str | None = None,
        entry: str | None = None,
    ) -> HelperAnswer:
        """Run the parse (or parse+config) tier on `argv`; restarts a dead helper once.
        `subcommand` (`["bench", "throughput"]`): `argv` is that `vllm` subcommand's, checked by its
        own parser only (the parse stage, whatever `tier` says). `argparse_only`: nothing after argparse
        runs (a command not known to be inert, without a sandbox: runner/isolation/trust.py). `warm`: the
        folder of the served model, one the runner resolved (never one the docs name): a config request
        is answered by a child of that model's zygote (runner/intarget/fork_zygote.py). `entry`: the
        legacy module the docs start the server with (Snippet.entry_point), parsed as it parses."""
        request = {
            "argv": argv,
            "tier": "parse" if subcommand or argparse_only else tier,
            "env": env or {},
            "code": trust.namespace_table(),
            "fail_closed": trust.fail_closed(),
            "argparse_only": argparse_only,
        }
        if warm and request["tier"] == "config":
            request["warm"] = warm
        if entry and not subcommand:
            request["entry"] = entry
        if subcommand:
            request["subcommand"] = list(subcommand)
        with self.lock:
            for attempt in range(1, self.attempts + 1):
                if self.proc is not None and self.proc.poll() is not None:
                    self.close()  # died since its last answer: what stopped it is said, not restarted over
                    self.raise_on_limit("it was stopped after its last answer")
                if self.proc is None:
                    try:
                        self._start()
                    except HelperError as err:
                        self.close()
                        self.raise_on_limit(str(err))
                        raise
                self._seq += 1
                try:
                    self.proc.stdin.write((json.dumps({"id": self._seq, **request}) + "\n").encode())
                    self.proc.stdin.flush()
                    answer = self._read(timeout)
                    if answer.get("id") not in (None, self._seq):
                        raise HelperError(f"helper answered request {answer.get('id')!r}, not {self._seq}")
                    if answer.get("crashed"):
                        raise CommandCrashed(str(answer["crashed"])[:2000])
                    if hit := self._log_past_limit():
                        raise LogPastLimit(hit)
                    return HelperAnswer.from_json(answer)
                except CommandCrashed:
                    raise  # asking again would run the same command to the same end
                except LogPastLimit as past:  # this command's ERROR, not the next one's: never retried
                    self.kill()
                    self.close()
                    self.sandbox_events = [past.hit]
                    self.raise_on_limit("the helper's log grew past its limit while it answered")
                except (HelperError, BrokenPipeError, OSError) as err:
                    self.close()
                    self.raise_on_limit(str(err))  # a limit would stop it again: never retried
                    if attempt == self.attempts:
                        raise HelperError(_with_limit(str(err), self.sandbox_events)) from None
            raise AssertionError("unreachable")

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    self.proc.stdin.close()
                    self.proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    self.proc.kill()
                    self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
        if self.launch is not None:
            self.sandbox_events = self.launch.finished()
            self.launch = None
        self.proc = None

    def raise_on_limit(self, message: str) -> None:
        """HelperError naming the limit when the sandbox stopped the last helper process at one; its log
        is set aside (`<log>.stopped.log`) and the next start writes a fresh one (the old one is past
        the log limit, or was filled by what was stopped)."""
        if not any("limit" in e for e in self.sandbox_events):
            return
        events, self.sandbox_events = self.sandbox_events, []
        if self._err is not None:
            os.close(self._err)
            self._err = None
            try:
                os.replace(self.log_path, self.log_path.with_suffix(".stopped.log"))
            except OSError:
                pass
        raise HelperError(_with_limit(message, events))

    def shutdown(self) -> None:
        """Close the helper and its log for good."""
        self.close()
        if self._err is not None:
            os.close(self._err)
            self._err = None


def contained(
    python: str,
    env: dict[str, str],
    log_path: Path,
    readable: list[str] = (),
    gpu: bool = False,
    jobs: int = 1,
    attempts: int = 2,
    vllm_cache: Callable[[], Path | None] | None = None,
    declared: dict | None = None,
) -> Helper:
    """A helper run by the target interpreter `python` in the sandbox (plainly where there is none
    and none is required), seeing `readable` (the model folders it will be asked about); `env`, the targets
    file's for this target (whose PYTHONPATH folders it sees: runner/isolation/sandbox `contain`), is laid
    over an allow-list of ours (runner/isolation/env_policy.py); `vllm_cache`: gives, when the helper starts
    (side by side with the other targets' helpers), the target's trusted folder of vLLM's model inspections
    (runner/serve/model_infos.py) or None, copied into its private /tmp as its VLLM_CACHE_ROOT; `declared`: the CUDA device
    to declare (runner/intarget/declared_device.py) — that helper instead of the plain one."""
    full = {**runner_env(), **without_secrets(env), "HF_HUB_OFFLINE": "1"}
    script = HELPER
    if declared is not None:
        script, full["DRIFTMATRIX_DECLARED_DEVICE"] = DECLARED_HELPER, json.dumps(declared)

    def launch() -> Launch:
        if refused := detection.required_missing():
            raise HelperError(refused)
        seed = vllm_cache() if vllm_cache is not None else None
        return sandbox.contain(
            [python, str(script)],
            python=python,
            env=full,
            kind="helper",
            jobs=jobs,
            readable=list(readable),
            gpu=gpu,
            operator_env=env,
            seeds=[(seed, "/tmp/vllm-cache")] if seed is not None and seed.is_dir() else [],
        )

    return Helper(launch, log_path, attempts=attempts)


def _with_limit(message: str, events: list[dict]) -> str:
    hit = next((e for e in events if "limit" in e), None)
    if hit is None:
        return message
    return f"{message}; {limits.explain(hit)}"
