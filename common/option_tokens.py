"""How vLLM's `vllm serve` parser reads an option token — the one rule, for every place that decides
something from what a command asks for (which code it loads, where its server listens, how many
devices it needs, which release accepts it).

vLLM's FlexibleArgumentParser rewrites a token before argparse sees it: `--max_model_len` is
`--max-model-len`, `--x.key=v` is `--x` with the dotted syntax, `-O3` is the optimisation option.
argparse then takes an option string exactly, or — `allow_abbrev`, on in every release read — as
the one `--` option it is a prefix of: `--trust-remote`, `--trust_remote_c` are `--trust-remote-code`
wherever no other option starts the same way. A reading that matches option names exactly is a
reading an attacker can step around (issue 44); so nothing here compares spellings, only what the
parser makes of them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Token:
    """An option as the parser sees it."""

    name: str
    """`--max-model-len`, `-tp`, `-O` (underscores turned to dashes, `=value` and `.key` cut)."""
    syntax: str | None
    """`--option.key` or `-O<level>` when the token needs that rewrite, else None."""


def token(text: str) -> Token | None:
    """None for something that is not an option (a value, a positional)."""
    if not text.startswith("-") or text in ("-", "--") or re.match(r"^-\.?\d", text):
        return None  # a value (a negative number), not an option
    head = text.split("=", 1)[0]
    if head.startswith("--"):
        base, dot, _ = head[2:].partition(".")
        return Token("--" + base.replace("_", "-"), "--option.key" if dot else None)
    if head.startswith("-O") and head != "-O" and not head.startswith("-O."):
        return Token("-O", "-O<level>")
    base, dot, _ = head.partition(".")
    return Token(base, "--option.key" if dot else None)


def matches(name: str, options: Iterable[str], allow_abbrev: bool = True) -> list[str]:
    """The option strings argparse may take the option `name` (a Token's name) for: itself where it
    is one, else every `--` option it is a prefix of (one: that option; several: argparse refuses
    the command as ambiguous; none: unrecognized)."""
    options = options if isinstance(options, (set, frozenset, dict)) else set(options)
    if name in options:
        return [name]
    if not allow_abbrev or not name.startswith("--") or len(name) <= 2:
        return []
    return sorted(o for o in options if o.startswith(name))


def resolve(text: str, options: Collection[str], allow_abbrev: bool = True) -> str | None:
    """The one option string the parser takes `text` for, or None (not an option, unknown, ambiguous)."""
    parsed = token(text)
    if parsed is None:
        return None
    found = matches(parsed.name, options, allow_abbrev)
    return found[0] if len(found) == 1 else None


def may_ask_for(text: str, option: str, options: Collection[str] | None = None) -> bool:
    """Could the parser take `text` for `option`? With the release's `options` known: exactly when it
    resolves to it. Unknown: whenever it is `option` or a `--` prefix of it — every spelling some
    release's argparse accepts counts, so a decision that must not be stepped around errs on the
    side of seeing the option."""
    parsed = token(text)
    if parsed is None:
        return False
    if options is not None:
        return matches(parsed.name, options) == [option]
    return parsed.name == option or (
        parsed.name.startswith("--") and len(parsed.name) > 2 and option.startswith(parsed.name)
    )


def spelled_as(argv: list[str], option: str, options: Collection[str] | None = None) -> list[int]:
    """The positions in `argv` of every token the parser may take for `option` (`may_ask_for`)."""
    return [i for i, text in enumerate(argv) if may_ask_for(text, option, options)]


def canonical(argv: list[str], options: Collection[str], allow_abbrev: bool = True) -> list[str]:
    """`argv` with each option token spelled as the option the parser takes it for (`--trust_remote`
    → `--trust-remote-code`, `--max_model_len=8` → `--max-model-len=8`, `--x_y.k v` → `--x-y.k v`);
    values, positionals and what the parser would refuse (unknown, ambiguous) left as they are."""
    out = []
    for text in argv:
        parsed = token(text)
        found = matches(parsed.name, options, allow_abbrev) if parsed and parsed.name.startswith("--") else []
        if len(found) != 1 or found[0] == text.split("=", 1)[0]:
            out.append(text)
            continue
        head, eq, value = text.partition("=")
        dotted = head[2:].partition(".")[1:]  # ("." , "key") or ("", "")
        out.append(found[0] + "".join(dotted) + eq + value)
    return out
