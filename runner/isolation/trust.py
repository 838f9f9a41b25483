"""What may run without a sandbox, and which documented commands make vLLM run code that is not vLLM's.

Without a working sandbox (auto mode where bubblewrap is missing; `--unsandboxed` aside) only a command
known to be inert runs past argparse (`refusal`, over the allow-list in runner/isolation/inert_args.py);
anything else SKIPs from the config tier on, naming what is not known to be inert, and a command whose
file vLLM's parser itself reads (`--config`) is not even parsed (`parse_refusal`). With a sandbox every
command runs to the tier asked, each in a process of its own (runner/intarget/fork_server.py).

The code options below are not what decides that (the allow-list does); they name, first and by their
own words, what a refused command asks for (`--trust-remote-code` "runs the model repository's own
Python code"), and the helper reads them in the parsed namespace too: a code option the parser read
where no token of the command spells it (a `--config` file's keys) is noted on the outcome and, without
a sandbox, stops the command after argparse. "Asks for" means what vLLM's parser makes of the argv,
never how the docs spell it: every spelling argparse accepts counts (`--trust-remote`,
`--trust_remote_c`: common/option_tokens.py), read with the target release's own option strings where
the helper gave them, and otherwise as any `--` prefix of a code option (erring on the side of seeing it).
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass

from driftmatrix.common.option_tokens import spelled_as, token
from driftmatrix.flaghistory.commands import shipped
from driftmatrix.runner.isolation import inert_args
from driftmatrix.runner.isolation.sandbox import detection


@dataclass(frozen=True)
class CodeOption:
    """A `vllm serve` option whose value makes vLLM import or run code from outside vLLM."""

    option: str
    dest: str
    """Its name in the parsed namespace (argparse's dest)."""
    why: str
    own_values: frozenset[str] = frozenset()
    """Values that name vLLM's own code (no import of anything else)."""


CODE_OPTIONS: tuple[CodeOption, ...] = (
    CodeOption("--trust-remote-code", "trust_remote_code", "runs the model repository's own Python code"),
    CodeOption("--tool-parser-plugin", "tool_parser_plugin", "imports a Python file the docs name"),
    CodeOption("--reasoning-parser-plugin", "reasoning_parser_plugin", "imports a Python file the docs name"),
    CodeOption("--worker-cls", "worker_cls", "imports a class the docs name", frozenset({"auto"})),
    CodeOption("--worker-extension-cls", "worker_extension_cls", "imports a class the docs name"),
    CodeOption("--logits-processors", "logits_processors", "imports classes the docs name"),
    CodeOption("--middleware", "middleware", "imports classes the docs name"),
    CodeOption("--scheduler-cls", "scheduler_cls", "imports a class the docs name"),
    CodeOption(
        "--distributed-executor-backend",
        "distributed_executor_backend",
        "imports a class the docs name",
        frozenset({"mp", "ray", "uni", "external_launcher"}),
    ),
)
"""Options whose presence (or a value not in `own_values`) makes vLLM load code from outside vLLM."""
BY_OPTION = {c.option: c for c in CODE_OPTIONS}
BY_DEST = {c.dest: c for c in CODE_OPTIONS}


def namespace_table() -> dict[str, list[str]]:
    """What the helper reads in a parsed namespace (dest -> vLLM's own values): sent with each request."""
    return {c.dest: sorted(c.own_values) for c in CODE_OPTIONS}


def foreign_code(argv: list[str], options: Collection[str] | None = None) -> list[str]:
    """The code options `argv` asks for, by every spelling the parser takes for them; `options`: the
    target release's option strings (None: unknown, any `--` prefix of a code option counts)."""
    found = set()
    for code in CODE_OPTIONS:
        for i in spelled_as(argv, code.option, options):
            if not code.own_values or _value(argv, i) not in code.own_values:
                found.add(code.option)
    return sorted(found)


def _value(argv: list[str], i: int) -> str:
    text = argv[i]
    if "=" in text:
        return text.split("=", 1)[1]
    nxt = argv[i + 1] if i + 1 < len(argv) else ""
    return "" if token(nxt) is not None else nxt


def from_namespace(dests: list[str]) -> list[str]:
    """The options of the dests the helper found set in a parsed namespace."""
    return sorted({BY_DEST[d].option if d in BY_DEST else d for d in dests})


def refusal(
    argv: list[str],
    options: Collection[str] | None = None,
    seen: Collection[str] = (),
    *,
    env: dict[str, str] | None = None,
    version: str | None = None,
    ours: Collection[str] = (),
) -> str | None:
    """Why this command must not run past argparse here, or None: without a sandbox only what is known
    to be inert runs (runner/isolation/inert_args.py, an allow-list); `seen`: code options the parser
    found that no token spells (the helper's namespace); `env`: the docs' env that would be passed;
    `version`: the build's, for the option history's release; `ours`: values driftmatrix put in."""
    if not fail_closed():  # a sandbox, or --unsandboxed (plain by request, recorded)
        return None
    code = [  # first: what loads code, by any spelling or by what the parser read
        inert_args.NotInert(_as_written(argv, flag, options), _why(flag))
        for flag in sorted({*foreign_code(argv, options), *seen})
    ]
    found = inert_args.not_inert(argv, env or {}, inert_args.Reading.of(_history(), version or ""), ours)
    items = [*code, *(i for i in found if not any(i.what.startswith(c.what.split(" ")[0]) for c in code))]
    if not items:
        return None
    listed = "; ".join(item.text() for item in items[:4])
    more = f"; and {len(items) - 4} more" if len(items) > 4 else ""
    return (
        f"{NOT_RUN}{listed}{more}; {detection.describe()}; {detection.how_to_get()}, or run "
        "with --unsandboxed to check it as plain processes anyway"
    )


NOT_RUN = "not run without a sandbox: "
"""How every reason of plain mode's refusal starts."""


def fail_closed() -> bool:
    """Only what is known to be inert may run here: no sandbox, and plain processes not asked for."""
    return not detection.active() and detection.mode()[0] != "off"


@functools.cache
def _history():
    """The shipped option history, read once (what the allow-list knows of each release)."""
    return shipped()


def _why(flag: str) -> str:
    return BY_OPTION[flag].why if flag in BY_OPTION else "vLLM's parser read it as loading code"


def parse_refusal(argv: list[str]) -> str | None:
    """Why not even vLLM's parser may read this command here (it reads a file the docs name), or None."""
    if not fail_closed():
        return None
    read = [o for o in inert_args.PARSER_READS if o in {a.split("=", 1)[0] for a in argv}]
    if not read:
        return None
    return (
        f"not parsed without a sandbox: {', '.join(f'`{o}` ({inert_args.PARSER_READS[o]})' for o in read)}; "
        f"{detection.describe()}; {detection.how_to_get()}"
    )


def _as_written(argv: list[str], flag: str, options: Collection[str] | None) -> str:
    """`flag`, and how the docs spelled it where that differs (`--trust-remote`, read as …)."""
    spelled = {argv[i].split("=", 1)[0] for i in spelled_as(argv, flag, options)} - {flag}
    written = f" (written `{', '.join(sorted(spelled))}`)" if spelled else ""
    return f"`{flag}`{written}"
