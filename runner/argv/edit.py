"""The command a job runs: options removed from an argv list (both `--flag value` and `--flag=value`
forms), and the variants of a snippet."""

from __future__ import annotations

import json
from collections.abc import Callable

from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.extractor.vllm_commands import SPEC_FLAGS

VARIANTS = ("no-spec", "self-spec")
FIX = "fix"
"""The variant of a fix candidate (a Snippet with `fix` set: publisher/fixes.py): the fixed argv,
run no deeper than the stage its original failed at (runner/argv/tier.py)."""


def without_options(argv: list[str], unwanted: Callable[[str], bool]) -> list[str]:
    """`argv` minus every option whose name `unwanted(name)` accepts, with its value.
    Each such option is taken to carry one value (true of the ones removed here)."""
    out, skip = [], False
    for token in argv:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0]
        if name.startswith("-") and unwanted(name):
            skip = "=" not in token
            continue
        out.append(token)
    return out


def drop_speculative(argv: list[str]) -> list[str]:
    """The same command without its speculative config (all spellings, dotted keys too)."""
    dotted = tuple(f"{f}." for f in SPEC_FLAGS)
    return without_options(argv, lambda name: name in SPEC_FLAGS or name.startswith(dotted))


def variant_argv(snippet: Snippet, variant: str | None) -> list[str]:
    """The command a variant runs: as documented, without its speculative config (`no-spec`),
    or with the served model as its own draft (`self-spec`: with greedy requests nearly every
    draft is accepted, the upper bound for speculative decoding's gain on this command)."""
    if variant == "no-spec":
        return drop_speculative(snippet.argv)
    if variant == "self-spec":
        k = (snippet.speculative_config or {}).get("num_speculative_tokens") or 4
        spec = {"model": snippet.model, "method": "draft_model", "num_speculative_tokens": k}
        return [*drop_speculative(snippet.argv), "--speculative-config", json.dumps(spec)]
    return list(snippet.argv)
