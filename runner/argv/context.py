"""The context length a command asks for."""

from __future__ import annotations

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
