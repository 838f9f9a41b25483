"""Snippets of kind `subcommand`: another `vllm` subcommand the docs give a speculative config to
(`vllm bench throughput|latency|serve …`, `vllm run-batch …`). The runner checks each with that
subcommand's own argument parser and its validate(), in the target's helper (the parse tier);
none of them is a server, so the config, start, probe and perf tiers SKIP with `reason()`.
No model is fetched and no twin is built for them: a parser needs neither."""

from __future__ import annotations

from driftmatrix.extractor.snippet_record import Snippet

WHAT = {
    ("bench", "serve"): "a benchmark client",
    ("bench", "throughput"): "an offline benchmark",
    ("bench", "latency"): "an offline benchmark",
    ("bench",): "a benchmark",
    ("run-batch",): "a batch job",
}
"""What each subcommand is, in words, by its words (the longest prefix that is listed)."""


def words(snippet: Snippet) -> list[str] | None:
    """The words after `vllm` (`["bench", "throughput"]`) of a subcommand snippet; None for any
    other kind (and for a subcommand record without them)."""
    if snippet.kind != "subcommand":
        return None
    return list(snippet.subcommand or []) or None


def program(snippet: Snippet) -> str:
    """What the snippet's argv follows on its command line: `vllm serve`, or `vllm bench throughput`."""
    sub = words(snippet)
    return "vllm " + " ".join(sub) if sub else "vllm serve"


def reason(sub: list[str]) -> str:
    """Why the tiers after parse SKIP for `vllm SUB…`, in plain words."""
    what = next(
        (WHAT[tuple(sub[:n])] for n in range(len(sub), 0, -1) if tuple(sub[:n]) in WHAT), "another vLLM command"
    )
    return f"`vllm {' '.join(sub)}` is {what}, not a server: checked with its own argument parser only"
