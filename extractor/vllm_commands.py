"""Which vLLM command a simple command is, once wrappers are peeled off (extractor/wrappers.py): the
server (`vllm serve`, the legacy `python -m vllm.entrypoints.openai.api_server`), another vLLM
subcommand given a speculative config (`vllm bench throughput …`, `vllm run-batch -sc …`), or bare
server options shown without a command (a fragment)."""

from __future__ import annotations

from driftmatrix.extractor.shell_lexer import Word
from driftmatrix.extractor.snippet_record import LEGACY_SERVER, Lint
from driftmatrix.extractor.wrappers import vllm_entry

SPEC_FLAGS = ("--speculative-config", "--speculative_config", "-sc")


def server_args(cmd: list[Word]) -> tuple[list[Word], Lint | None] | None:
    """The arguments after the vLLM server entry point, if `cmd` starts one."""
    n = vllm_entry(cmd)
    if n is None or not _serves(cmd, 0, n):
        return None
    if n == 3 and cmd[2].text == LEGACY_SERVER:
        return cmd[3:], Lint(
            "legacy-entrypoint",
            "`python -m vllm.entrypoints.openai.api_server` is the legacy entry point; "
            "`vllm serve` is the documented one",
        )
    return cmd[n + 1 :], None


def _serves(cmd: list[Word], k: int, n: int) -> bool:
    """The vLLM CLI named by the `n` words at `cmd[k]` starts the server."""
    return (n == 3 and cmd[k + 2].text == LEGACY_SERVER) or (k + n < len(cmd) and cmd[k + n].text == "serve")


def subcommand_args(cmd: list[Word]) -> tuple[list[str], list[Word]] | None:
    """(subcommand words, arguments) for `vllm bench throughput … --speculative-config …` or
    `vllm run-batch … -sc …`: another vLLM subcommand given a speculative config."""
    n = vllm_entry(cmd)
    found = _subcommand_at(cmd, 0, n) if n is not None else None
    if found is None or not any(_is_spec_flag(w) for w in cmd[found[1] :]):
        return None
    return found[0], cmd[found[1] :]


def _subcommand_at(cmd: list[Word], k: int, n: int) -> tuple[list[str], int] | None:
    """(subcommand words, where its arguments start) of the vLLM CLI named by the `n` words at
    `cmd[k]`, when it names another subcommand than `serve` (whether a speculative config follows
    is the caller's question)."""
    if cmd[k + n - 1].text == LEGACY_SERVER or len(cmd) <= k + n:
        return None
    sub = [cmd[k + n].text]
    if sub[0] in ("serve", "--version") or sub[0].startswith("-"):
        return None
    if sub[0] == "bench" and len(cmd) > k + n + 1 and not cmd[k + n + 1].text.startswith("-"):
        sub.append(cmd[k + n + 1].text)
    return sub, k + n + len(sub)


def _is_spec_flag(word: Word) -> bool:
    return word.text.split("=", 1)[0].split(".", 1)[0] in SPEC_FLAGS


def is_fragment(words: list[Word]) -> bool:
    """Bare server options shown without a command (`--max-num-seqs 32 --speculative-config '{…}'`):
    options only, a speculative config among them."""
    return words[0].text.startswith("-") and any(_is_spec_flag(w) for w in words)


class VllmStarts:
    """`split_at_vllm`'s question, whether `cmd[k:]` is a vLLM command to read (`server_args` or
    `subcommand_args` of it is not None), in constant time per place: the last speculative-config
    flag of the command is found once, not searched for in the rest at every `vllm` in it."""

    def __init__(self) -> None:
        self.last_spec: int | None = None

    def __call__(self, cmd: list[Word], k: int) -> bool:
        n = vllm_entry(cmd, k)
        if n is None:
            return False
        if _serves(cmd, k, n):
            return True
        found = _subcommand_at(cmd, k, n)
        if found is None:
            return False
        if self.last_spec is None:
            self.last_spec = max((i for i, w in enumerate(cmd) if _is_spec_flag(w)), default=-1)
        return self.last_spec >= found[1]
