"""Which documented commands make vLLM run code that is not vLLM's, and what that requires.

A model repository's Python (`--trust-remote-code`) or a plugin file or class the docs name runs
with whatever the process can reach. Such a command
- gets a helper process of its own for its config tier (runner/jobs/job.py): its code cannot stay
  behind in the long-lived helper and change how later commands are parsed or configured;
- runs only in a sandbox: without one, its config tier and beyond SKIP with the reason (fail
  closed), unless the run was started `--unsandboxed` or with DRIFTMATRIX_SANDBOX=off (said in every
  outcome).
"""

from __future__ import annotations

from runner.isolation import sandbox

CODE_OPTIONS = {
    "--trust-remote-code": "runs the model repository's own Python code",
    "--tool-parser-plugin": "imports a Python file the docs name",
    "--reasoning-parser-plugin": "imports a Python file the docs name",
    "--worker-cls": "imports a class the docs name",
    "--worker-extension-cls": "imports a class the docs name",
    "--logits-processors": "imports classes the docs name",
    "--middleware": "imports classes the docs name",
    "--scheduler-cls": "imports a class the docs name",
}
"""Options whose presence makes vLLM load code from outside vLLM (their `_` spellings too)."""
NOT_CODE = {"--distributed-executor-backend": {"mp", "ray", "uni", "external_launcher"}}
"""Options that load code only when their value is not one of vLLM's own names."""


def foreign_code(argv: list[str]) -> list[str]:
    """The options of `argv` that load code that is not vLLM's."""
    found = []
    for i, token in enumerate(argv):
        flag, _, value = token.partition("=")
        flag = flag.replace("_", "-") if flag.startswith("--") else flag
        if flag in CODE_OPTIONS:
            found.append(flag)
        elif flag in NOT_CODE:
            value = value or (argv[i + 1] if i + 1 < len(argv) else "")
            if value and value not in NOT_CODE[flag]:
                found.append(flag)
    return sorted(set(found))


def refusal(argv: list[str]) -> str | None:
    """Why this command's code-running tiers must not run here (no sandbox), or None."""
    code = foreign_code(argv)
    if not code or sandbox.active():
        return None
    if sandbox.mode()[0] == "off":  # --unsandboxed or DRIFTMATRIX_SANDBOX=off: plain by request, recorded
        return None
    why = "; ".join(f"{flag} {CODE_OPTIONS.get(flag, 'loads code the docs name')}" for flag in code)
    return (f"not run without a sandbox: {why}, and {sandbox.describe()}; {sandbox.how_to_get()}, or run with "
            "--unsandboxed to check it as plain processes anyway")
