"""Removing options from an argv list (both `--flag value` and `--flag=value` forms)."""

from __future__ import annotations

from typing import Callable


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
