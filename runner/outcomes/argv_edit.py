"""The command a job runs: options removed from an argv list (both `--flag value` and
`--flag=value` forms), the variants of a snippet, and how many devices a command asks for."""

from __future__ import annotations

import json
from typing import Callable

from extractor.records import Snippet
from extractor.shell_commands import SPEC_FLAGS

PARALLEL_FLAGS = {"--tensor-parallel-size": 1, "-tp": 1, "--pipeline-parallel-size": 1, "-pp": 1,
                  "--data-parallel-size": 1, "-dp": 1}
EXPERT_PARALLEL_FLAGS = ("--enable-expert-parallel", "-ep")
"""Expert parallel on: the experts split over the tensor x data parallel ranks (vLLM's EP size)."""


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


VARIANTS = ("no-spec", "self-spec")
FIX = "fix"
"""The variant of a fix candidate (a Snippet with `fix` set: publisher/fixes.py): the fixed argv,
run no deeper than the stage its original failed at."""


def job_tier(snippet: Snippet, tier: str) -> str:
    """The last tier a job of this snippet runs: a fix stops where its original failed."""
    from runner.outcomes.records import TIERS
    wanted = (snippet.fix or {}).get("tier")
    return min(tier, wanted, key=TIERS.index) if wanted in TIERS else tier


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


def devices_needed(argv: list[str]) -> int:
    sizes = parallel_sizes(argv)
    return sizes["tp"] * sizes["pp"] * sizes["dp"]


def tensor_parallel(argv: list[str]) -> int:
    """The tensor parallel size the command asks for (1 when it does not)."""
    return parallel_sizes(argv)["tp"]


def parallel_sizes(argv: list[str]) -> dict[str, int]:
    """{tp, pp, dp, ep} as the command sets them (1 where it does not; ep: the expert parallel size,
    tp x dp where `--enable-expert-parallel` is given, as vLLM derives it)."""
    sizes = {"tp": 1, "pp": 1, "dp": 1, "ep": 1}
    expert_parallel = False
    for i, token in enumerate(argv):
        name, eq, value = token.partition("=")
        if name in EXPERT_PARALLEL_FLAGS:
            expert_parallel = value.lower() not in ("false", "0") if eq else True
        if name in PARALLEL_FLAGS:
            raw = value if eq else (argv[i + 1] if i + 1 < len(argv) else "1")
            kind = "tp" if "tensor" in name or name == "-tp" else "pp" if "pipeline" in name or name == "-pp" else "dp"
            try:
                sizes[kind] = max(int(raw), 1)
            except ValueError:
                pass
    if expert_parallel:
        sizes["ep"] = sizes["tp"] * sizes["dp"]
    return sizes


CONTEXT_FLAGS = ("--max-model-len", "--max_model_len")
_SCALE = {"k": 1000, "m": 1000**2, "g": 1000**3, "K": 1024, "M": 1024**2, "G": 1024**3}


def context_length(argv: list[str]) -> int | None:
    """The context length the command asks for (`--max-model-len`), read as vLLM reads it
    (`128k` = 128,000, `128K` = 131,072); None where it does not set one (or says `auto` / -1)."""
    value = None
    for i, token in enumerate(argv):
        name, eq, raw = token.partition("=")
        if name in CONTEXT_FLAGS:
            value = raw if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    if not value:
        return None
    scale = _SCALE.get(value[-1], 1)
    try:
        n = int(float(value[:-1] if scale > 1 else value) * scale)
    except ValueError:
        return None
    return n if n > 0 else None


def twin_shape(argv: list[str]) -> dict[str, int]:
    """What the command asks of a twin's shape: its parallel sizes (`parallel_sizes`) and, where it
    sets one, its context length (`context`), which a twin from class defaults is given
    (standin_split.fit_context)."""
    n = context_length(argv)
    return {**parallel_sizes(argv), **({"context": n} if n else {})}
