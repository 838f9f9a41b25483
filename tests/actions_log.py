"""What GitHub's Actions runner does with a step's output, for the tests that feed hostile docs and
vLLM text through the real commands: which lines it runs as workflow commands. A port of
actions/runner:

- src/Runner.Sdk/ProcessInvoker.cs: stdout and stderr are read with `StreamReader.ReadLine`, which
  ends a line at `\\n`, `\\r` or `\\r\\n`;
- src/Runner.Worker/ActionCommandManager.cs: each line goes to `ActionCommand.TryParseV2`, then to
  the legacy `TryParse`; a command is one whose name is registered (ordinal, case-blind);
- src/Runner.Common/ActionCommand.cs: `TryParseV2` trims leading whitespace (.NET `TrimStart`) and
  needs `::name props::data`; `TryParse` finds `##[name props]data` anywhere in the line.

Compared ordinally (the runner's HashSet is OrdinalIgnoreCase; its `StartsWith`/`IndexOf` are
taken here as ordinal: common/inert.py says why its rule holds under ICU's comparison too).
tests/ is on sys.path (its conftest.py is there)."""

from __future__ import annotations

import re
import unicodedata

REGISTERED = frozenset(
    {
        "stop-commands",
        "set-env",
        "set-output",
        "save-state",
        "add-mask",
        "add-path",
        "add-matcher",
        "remove-matcher",
        "debug",
        "warning",
        "error",
        "notice",
        "group",
        "endgroup",
        "echo",
    }
)
"""The names ActionCommandManager registers (its command extensions and `stop-commands`)."""
DOTNET_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
"""What .NET's `char.IsWhiteSpace` (and so `TrimStart`) takes for whitespace."""


def lines(output: str) -> list[str]:
    """The lines the runner reads (`StreamReader.ReadLine`)."""
    return re.split(r"\r\n|\r|\n", output)


def command(line: str) -> str | None:
    """The workflow command the runner would run for this line, or None."""
    v2 = line.lstrip(DOTNET_SPACE)
    if v2.startswith("::") and (end := v2.find("::", 2)) >= 0:
        name = v2[2:end].split(" ", 1)[0]
        if name.lower() in REGISTERED:
            return name
    if (at := line.find("##[")) >= 0 and (close := line.find("]", at)) >= 0:
        name = line[at + 3 : close].split(" ", 1)[0]
        if name.lower() in REGISTERED:
            return name
    return None


def controls(text: str) -> list[str]:
    """The control characters in `text` other than tab and newline (C0, DEL, C1: ESC, BEL, CSI, …)."""
    return sorted({c for c in text if unicodedata.category(c) == "Cc" and c not in "\t\n"})


def problems(text: str) -> list[str]:
    """Every line of `text` that the runner runs as a command, that starts with `::` after
    whitespace or holds `##[` at all (the shapes it parses), and every control character."""
    found = [f"command {command(ln)!r}: {ln!r}" for ln in lines(text) if command(ln)]
    found += [
        f"a command's shape: {ln!r}" for ln in lines(text) if ln.lstrip(DOTNET_SPACE).startswith("::") or "##[" in ln
    ]
    return found + [f"control character {c!r}" for c in controls(text)]


def assert_inert(text: str, where: str) -> None:
    found = problems(text)
    assert not found, f"{where}:\n" + "\n".join(dict.fromkeys(found))
