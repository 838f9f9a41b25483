"""Find `vllm serve`, `docker run … vllm/vllm-openai` and bare `--speculative-config`
fragments in a piece of shell text (a fenced block, a YAML string, a recipe guide).

The lexer gives words; here they are grouped into simple commands, env prefixes and
wrapper programs are peeled off (extractor/wrappers.py), the vLLM command told
(extractor/vllm_commands.py) or `docker run` read (extractor/docker_run.py), and `sh -c '…'`
scripts and quoted commands (`--serve-cmd 'vllm serve …'`) are searched recursively. Other `vllm`
subcommands that take a speculative config (`vllm bench throughput …`, `vllm run-batch …`) are
found too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from driftmatrix.extractor.docker_run import ContainerRun, container_run, is_server_image
from driftmatrix.extractor.shell_lexer import Operator, Word, lex
from driftmatrix.extractor.snippet_record import Lint
from driftmatrix.extractor.vllm_commands import VllmStarts, is_fragment, server_args, subcommand_args
from driftmatrix.extractor.wrappers import peel, searches_text, split_at_vllm, texts

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_PROMPT = re.compile(r"^([ \t]*)\$ (?=\S)", re.M)


@dataclass
class Invocation:
    """One command of interest found in shell text, before it becomes a Snippet."""

    kind: str
    """`serve`, `docker`, `subcommand` (`vllm bench …` with a speculative config) or `fragment`
    (bare `--speculative-config …` without a command)."""
    args: list[Word]
    """Server arguments: after `vllm serve`, after the docker image, or after the subcommand."""
    env: dict[str, str]
    env_words: list[Word]
    line: int
    """0-based line (in the lexed text) where the command starts."""
    end_line: int
    image: str | None = None
    docker_options: list[str] = field(default_factory=list)
    lints: list[Lint] = field(default_factory=list)
    wrapper: list[str] = field(default_factory=list)
    """Programs the command runs under (`nsys profile -o x`, `numactl …`): recorded, not run."""
    subcommand: list[str] | None = None
    """subcommand only: the words after `vllm` (`["bench", "throughput"]`)."""
    image_expansions: list[str] = field(default_factory=list)
    """Expansions in the docker image word (`"$IMAGE"`): placeholders the reader fills in."""
    within: str = ""
    """Where a command nested in a string sits (`the quoted value of --serve-cmd`); "" when it
    is a command line of its own."""


@dataclass
class ShellScan:
    invocations: list[Invocation]
    lints: list[Lint]
    unterminated: str | None
    heredocs: list[tuple[int, str]] = field(default_factory=list)
    """(0-based first line, body) of here-documents: data such as a kubectl manifest."""


_ASSIGNED = re.compile(r"(?<![^\s;&|(])([A-Za-z0-9_]+)=")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def assigned_names(text: str) -> frozenset[str]:
    """The names a script assigns somewhere: NAME is one when `(^|[\\s;&|(])NAME=` matches in `text`.
    One pass (a search of the whole script per name cost names x script)."""
    return frozenset(m[1] for m in _ASSIGNED.finditer(text))


def assigns(text: str, name: str, names: frozenset[str]) -> bool:
    """Whether `(^|[\\s;&|(])NAME=` matches in `text`, given `names = assigned_names(text)`."""
    if _IDENTIFIER.fullmatch(name):
        return name in names
    return re.search(rf"(^|[\s;&|(]){re.escape(name)}=", text) is not None  # not a name: as written


def strip_prompts(text: str) -> str:
    """`$ vllm serve …` → `  vllm serve …` (console prompts are not part of the command)."""
    return _PROMPT.sub(lambda m: m.group(1) + "  ", text)


# A line of program output, by the prefix a logger or test runner puts on it: a console block shows
# the server's log (`INFO 01-02 12:34:56 [api_server.py:123] Running: vllm serve …`), a CI log or a
# pytest report quoting a command; no shell command starts this way.
_LOG_LINE = re.compile(
    r"^[ \t]*(?:"
    r"\S+\.py::\S*"  # pytest node id: tests/test_serve.py::test_x PASSED
    r"|(?:PASSED|FAILED|XPASS|XFAIL|SKIPPED)\b"  # pytest outcome first (-rA summaries)
    r"|\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"  # [2025-01-01 12:00:00], 2025-01-01T12:00:00.1Z (CI)
    r"|\([^()\n]*\bpid=\d+\)"  # (APIServer pid=1234), (VllmWorker TP0 pid=7)
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?=[:\s\]])"  # INFO 01-02 …, INFO:     (uvicorn)
    r").*$",
    re.M,
)


def blank_log_lines(text: str) -> str:
    """`text` with lines of program output blanked (lines keep their numbers): output is not an
    instruction, whatever command it quotes."""
    return _LOG_LINE.sub("", text)


def simple_commands(tokens: list[Word | Operator]) -> list[tuple[list[Word], int]]:
    """Group tokens into simple commands (words, last line), dropping redirections."""
    commands: list[tuple[list[Word], int]] = []
    current: list[Word] = []
    skip_target = False
    for tok in tokens:
        if isinstance(tok, Operator):
            if tok.redirection:
                skip_target = True
                continue
            if current:
                commands.append((current, tok.line))
            current = []
        elif skip_target:
            skip_target = False
        else:
            current.append(tok)
    if current:
        commands.append((current, max(w.line for w in current)))
    return commands


def _env_dict(words: list[Word]) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in words:
        m = _ASSIGNMENT.match(w.text)
        if m:
            out[m.group(1)] = m.group(2)
    return out


_SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/env bash")


def option_value(options: list[str], name: str) -> str | None:
    """The value of `name` in an argv (`name value` or `name=value`), or None."""
    for i, opt in enumerate(options):
        if opt == name and i + 1 < len(options):
            return options[i + 1]
        if opt.startswith(name + "="):
            return opt.split("=", 1)[1]
    return None


def _shell_c(cmd: list[Word], depth: int) -> list[Invocation]:
    """Invocations inside `bash -c 'script'` (lines made relative to the outer text)."""
    if cmd[0].text not in _SHELLS:
        return []
    script = next((cmd[j + 1] for j, w in enumerate(cmd[:-1]) if w.text in ("-c", "-lc", "-ec", "-xc")), None)
    if script is None:
        return []
    inner = scan(script.text, depth + 1).invocations
    for inv in inner:
        inv.line += script.line
        inv.end_line += script.line
        for lint in inv.lints:
            lint.line = None if lint.line is None else lint.line + script.line
    return inner


def scan(text: str, depth: int = 0) -> ShellScan:
    """Find every serve/docker/subcommand/fragment invocation in `text`."""
    lexed = lex(blank_log_lines(strip_prompts(text)))
    found: list[Invocation] = []
    previous: Invocation | None = None  # the invocation that the last simple command was
    for cmd, end in simple_commands(lexed.tokens):
        peeled = peel(cmd)
        env_words, rest = peeled.env, peeled.command
        if not rest:
            previous = None
            continue
        start = cmd[0].line
        if previous is not None and not env_words and rest[0].text.startswith("--"):
            previous.lints.append(
                Lint(
                    "orphan-arguments",
                    f"this line starts with `{rest[0].text}` but the command ended on the line before "
                    "(no `\\`): bash runs these arguments as a separate command",  # `start` is relative here
                    start,
                )
            )
            continue
        found_here = _invocations(peeled, start, end, depth)
        found += found_here
        previous = (
            found_here[-1]
            if len(found_here) == 1 and found_here[0].kind != "fragment" and not found_here[0].within
            else None
        )
    return ShellScan(found, lexed.lints, lexed.unterminated, lexed.heredocs)


def _invocations(peeled, start: int, end: int, depth: int) -> list[Invocation]:
    """The invocations one simple command is or holds."""
    env_words, rest = peeled.env, peeled.command
    env = _env_dict(env_words)
    run = container_run(rest)
    if run is not None:
        found = _container_invocations(run, peeled, start, end, depth)
        if found or is_server_image(run.image.text):
            return found
    if searches_text(rest):  # `pgrep -f "vllm serve"`: a pattern, not a command (nor a quoted one)
        return []
    if rest[0].text in _SHELLS and depth < 3:
        inner = _shell_c(rest, depth)
        for inv in inner:
            inv.env = env | inv.env
            inv.wrapper = texts(peeled.wrapper) + inv.wrapper
        return inner
    peeled = split_at_vllm(peeled, VllmStarts())
    env_words, rest, wrapper = peeled.env, peeled.command, texts(peeled.wrapper)
    env = _env_dict(env_words)
    server = server_args(rest)
    if server is not None:
        args, lint = server
        inv = Invocation("serve", args, env, env_words, start, end, wrapper=wrapper)
        if lint:
            inv.lints.append(Lint(lint.code, lint.message, start))
        return [inv]
    sub = subcommand_args(rest)
    if sub is not None:
        return [Invocation("subcommand", sub[1], env, env_words, start, end, wrapper=wrapper, subcommand=sub[0])]
    if is_fragment(rest):
        return [Invocation("fragment", rest, env, env_words, start, end)]
    return _quoted_commands(rest, depth) if depth < 3 else []


def _container_invocations(run: ContainerRun, peeled, start: int, end: int, depth: int) -> list[Invocation]:
    """The vLLM servers a container started on a shell line runs (`docker run`, `podman run`, `kubectl
    run`): see container_invocations; the shell line's own env prefix and wrappers are the command's too."""
    found = container_invocations(run, start, end, depth)
    for inv in found:
        inv.env = _env_dict(peeled.env) | inv.env
        inv.env_words = peeled.env + inv.env_words
        inv.wrapper = texts(peeled.wrapper)
    return found


def container_invocations(
    run: ContainerRun, start: int, end: int, depth: int = 0, own_lines: bool = False
) -> list[Invocation]:
    """The vLLM servers a container runs, each a `docker` invocation of its image: the image's own
    entry point when it is vLLM's server (`vllm/vllm-openai:v0.8.5 --model X`: the words after the
    image are the server's arguments), else the program it is given (`--entrypoint python3 IMAGE -m
    vllm.entrypoints.openai.api_server …`, `--entrypoint vllm IMAGE serve …`, `IMAGE vllm serve …`,
    kubectl's `--command -- vllm serve …`) or a shell script that program runs (`--entrypoint bash
    IMAGE -lc "… vllm serve …"`). Also a compose service's (extractor/compose_files.py). Each is at the
    container's lines (`start`, `end`), or with `own_lines` a server in a script at its own."""
    program = _program(run)
    if program is None:
        return [_in_container(run, run.args, start, end, [])]
    server = server_args(program)
    if server is not None:
        args, lint = server
        return [_in_container(run, args, start, end, [Lint(lint.code, lint.message, start)] if lint else [])]
    if depth >= 3 or not program:
        return []
    # `--entrypoint bash IMAGE -lc "… vllm serve …"` (or `--entrypoint="" IMAGE bash -lc "…"`): the server
    # starts inside.
    return [
        _in_container(run, inv.args, *((inv.line, inv.end_line) if own_lines else (start, end)), inv.lints, inv)
        for inv in _shell_c(program, depth)
        if inv.kind == "serve"
    ]


def _program(run: ContainerRun) -> list[Word] | None:
    """What the container runs, from its program name on; None when it is the image's own server entry
    point, given the words after the image as its arguments."""
    if run.entry is not None:
        return run.entry + run.args
    if [w.text for w in run.args[:2]] == ["vllm", "serve"] or not is_server_image(run.image.text):
        return run.args
    return None


def _in_container(
    run: ContainerRun, args: list[Word], start: int, end: int, lints: list[Lint], inside: Invocation | None = None
) -> Invocation:
    """A `docker` invocation of the container's image; `inside`: the server a script in it starts (its
    own env assignments added to the container's)."""
    return Invocation(
        "docker",
        args,
        _env_dict(run.env) | (inside.env if inside else {}),
        [*run.env, *(inside.env_words if inside else [])],
        start,
        end,
        run.image.text,
        run.options,
        lints,
        image_expansions=run.image.expansions,
    )


def _quoted_commands(words: list[Word], depth: int) -> list[Invocation]:
    """vLLM commands inside a quoted word of another command (`vllm bench sweep serve --serve-cmd
    'vllm serve …'`, `ssh host "vllm serve …"`), lines made relative to the outer text."""
    out: list[Invocation] = []
    for j, word in enumerate(words):
        if not word.quoted or "vllm" not in word.text or j == 0:
            continue
        before = words[j - 1].text
        within = f"the quoted value of {before}" if before.startswith("-") else "a quoted argument"
        for inv in scan(word.text, depth + 1).invocations:
            if inv.kind == "fragment":
                continue
            inv.line += word.line
            inv.end_line = max(inv.end_line + word.line, inv.line)
            inv.within = inv.within or within
            for lint in inv.lints:
                lint.line = None if lint.line is None else lint.line + word.line
            out.append(inv)
    return out
