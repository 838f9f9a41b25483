"""How vLLM words a deprecation, read strictly: a text counts for an option only when the
option is what the sentence says is deprecated (`--x is deprecated`, `` `x_field` is
deprecated``, `[DEPRECATED] …` as its own help) — not when a message merely names it
("Using --url is deprecated, use --host", "The -O.* syntax for --compilation-config is
deprecated", "`--convert reward` is deprecated": a value, not the option)."""

from __future__ import annotations

import re

NAME = r"(?:--[a-zA-Z][\w-]*[a-zA-Z0-9]|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)"
"""An option as a message names it: `--flag-name` or a snake_case field name."""
SUBJECT = re.compile(
    r"(?:^|(?<=[.!?]\s))\W{0,3}(?:the\s+)?(?:option\s+|flag\s+|argument\s+)?[`'\"]?(?P<name>" + NAME + r")[`'\"]?"
    r"(?:\s*\((?P<alias>--[\w-]+)\))?\s+(?:option\s+|flag\s+|argument\s+|field\s+)?"
    r"(?:is|are|has been|was)\s+(?:now\s+)?deprecated\b",
    re.IGNORECASE,
)
HELP_DEPRECATED = re.compile(
    r"^\W*deprecated\b|\bthis (?:option|parameter|flag|argument|field|is a transitional option)\b[^.]{0,40}"
    r"\b(?:deprecated|will be removed)\b",
    re.IGNORECASE,
)
MENTION = re.compile(
    r"(?<![\w-])(--[a-zA-Z][\w-]*[a-zA-Z0-9](?:\.[a-zA-Z_][\w.]*[a-zA-Z0-9_])?)"
    r"|`([a-z][a-z0-9]*(?:_[a-z0-9]+)+(?:\.[a-z_][\w.]*)?)`"
)
REPLACING = re.compile(r"\b(?:use|instead|replaced|in favou?r|switch|migrate|superseded)\b", re.IGNORECASE)


def as_option(name: str) -> str:
    """`swap_space` / `--swap_space` → `--swap-space` (a `.key` suffix kept as written)."""
    base, dot, rest = name.lstrip("-").partition(".")
    return "--" + base.replace("_", "-") + (dot + rest)


def base_option(name: str) -> str:
    return name.partition(".")[0]


def help_says_deprecated(text: str) -> bool:
    return bool(text) and bool(HELP_DEPRECATED.search(text))


def subjects(text: str) -> list[str]:
    """The options a message declares deprecated, as `--options`."""
    found = []
    for match in SUBJECT.finditer(text):
        found.append(as_option(match.group("alias") or match.group("name")))
    return found


def _twins(name: str) -> set[str]:
    bare = name[5:] if name.startswith("--no-") else name[2:]
    return {"--" + bare, "--no-" + bare}


def replacement(text: str, subject: str, known: set[str]) -> str | None:
    """The first existing option the text tells people to use instead of `subject`."""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if not REPLACING.search(sentence):
            continue
        for match in MENTION.finditer(sentence):
            name = as_option(match.group(1) or match.group(2))
            if base_option(name) in known and base_option(name) not in _twins(subject):
                return name
    return None
