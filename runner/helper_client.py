"""The driftmatrix side of `vllm_helper.py`: one long-lived helper per target env."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from runner.env_policy import without_secrets
from runner.settings import HELPER_ANSWER_S, HELPER_IMPORT_S

HELPER = Path(__file__).resolve().parent / "intarget" / "vllm_helper.py"


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

    @classmethod
    def from_json(cls, data: dict) -> HelperAnswer:
        ok = data.get("ok")
        return cls("skipped" if ok is None else "ok" if ok else "failed", data.get("stage") or "parse",
                   data.get("error") or {}, data.get("skip"), list(data.get("warnings") or []),
                   dict(data.get("effective_config") or {}))


class HelperError(RuntimeError):
    """The helper died or stopped answering: our side's fault (ERROR), with its stderr tail."""


class Helper:
    def __init__(self, python: str, env: dict[str, str], log_path: Path, import_timeout: float = HELPER_IMPORT_S,
                 command: list[str] | None = None):
        self.python, self.env, self.log_path = python, env, log_path
        self.command = command or [python, str(HELPER)]  # docker targets run it inside the image
        self.import_timeout = import_timeout
        self.proc: subprocess.Popen | None = None
        self.import_s: float | None = None
        self.lock = threading.Lock()
        self._seq = 0

    def _start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._err = self.log_path.open("ab")
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, env=without_secrets({**os.environ, **self.env}),
                                     start_new_session=True)
        hello = self._read(self.import_timeout)
        if not hello.get("ready"):
            err = hello.get("error") or {}
            self.close()
            raise HelperError(f"vLLM's parser could not be built: {err.get('type')}: {err.get('message')}")
        self.import_s = hello.get("import_s")

    def _read(self, timeout: float) -> dict:
        assert self.proc and self.proc.stdout
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        end = time.monotonic() + timeout
        try:
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    raise HelperError(f"helper gave no answer within {timeout:.0f} s")
                if sel.select(left):
                    line = self.proc.stdout.readline()
                    if not line:
                        raise HelperError(f"helper exited ({self.proc.wait()}); stderr: {self.stderr_tail()}")
                    return json.loads(line)
        finally:
            sel.close()

    def stderr_tail(self, n: int = 8) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def ask(self, argv: list[str], tier: str, timeout: float = HELPER_ANSWER_S,
            env: dict[str, str] | None = None, subcommand: list[str] | None = None) -> HelperAnswer:
        """Run the parse (or parse+config) tier on `argv`; restarts a dead helper once.
        `subcommand` (`["bench", "throughput"]`): `argv` is that `vllm` subcommand's, checked by its
        own parser only (the parse stage, whatever `tier` says)."""
        request = {"argv": argv, "tier": "parse" if subcommand else tier, "env": env or {}}
        if subcommand:
            request["subcommand"] = list(subcommand)
        with self.lock:
            for attempt in (1, 2):
                if self.proc is None or self.proc.poll() is not None:
                    self._start()
                self._seq += 1
                try:
                    self.proc.stdin.write((json.dumps({"id": self._seq, **request}) + "\n").encode())
                    self.proc.stdin.flush()
                    return HelperAnswer.from_json(self._read(timeout))
                except (HelperError, BrokenPipeError, OSError) as err:
                    self.close()
                    if attempt == 2:
                        raise HelperError(str(err)) from None
            raise AssertionError("unreachable")

    def close(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.proc = None
