"""Placeholders never hide the rest of a command (issue 32, point 4).

The docs write the reader's own model or file as a placeholder (`vllm serve {your model directory}`,
`<MODEL>`, `$MODEL`, `/path/to/model`, `my-model`). The snippet record keeps saying so
(`placeholders`, `runnable: False`); the runner puts a replacement in its place for the tiers that do not
need the real one. The served model's place gets a name for the parser (it reads only the word) and,
for the config tier with `--stand-ins`, the twin of a small dense decoder (TWIN_OF); a file or folder
gets a path that does not exist; a draft model inside the speculative config gets a name (its type
decides the speculative config, so the config tier SKIPs). Any other placeholder (a number, an
address, `<args…>`, an API key) stays, and the command is judged as before: SKIP on any parse error
but an unknown flag.

What a replacement can decide (`blamed`): a failure that names a replacement, the placeholder, or the option
holding it, is the replacement's (SKIP); so is every config failure on a replacement (the reader's model or
file might not fail so). Any other parse failure is the command's. A start/probe tier never runs on a
replacement: a server is the reader's model or nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from driftmatrix.extractor.serve_args import SPEC_FLAG, is_args_placeholder, parse_serve_args
from driftmatrix.runner.outcomes.evidence_record import PlaceholderReplacement

TWIN_OF = "Qwen/Qwen3-0.6B"
"""The model whose twin stands in for a placeholder model: a small dense decoder whose twin every build
makes offline (the hand-built qwen3 family, from transformers' Qwen3Config defaults)."""
MODEL_NAME = "placeholder-model"
"""What the parser reads in a placeholder model's place when no twin is built (parse tier only)."""
MISSING = "/nonexistent"
"""Prefix of a path that stands in for a placeholder file or folder (never there, in or out of the sandbox)."""
# a placeholder whose text says it is a file or folder: `/path/to/x`, `<path_to_checkpoint>`, `$DFLASH_DIR`
_PATH_TEXT = re.compile(r"(?i)^/path/to/|(?:^|[^a-z])(?:path|dir|directory|folder|file|checkpoint|ckpt)s?(?:[^a-z]|$)")
_MODEL_FLAGS = ("--model", "model_tag")  # how argparse names the served model in its messages


@dataclass(frozen=True)
class StoodIn:
    """One placeholder and what the runner put in its place."""

    placeholder: str
    """As the docs write it (`{your model directory}`)."""
    role: str
    """`model` (the served model), `draft model` or `path`."""
    value: str
    """What replaced it in the argv (a name, a path that does not exist, or a twin's folder)."""
    flags: tuple[str, ...] = ()
    """The options whose values held it (argparse names them in its messages)."""
    twin: bool = False
    """The value is a random-weight twin's folder (TWIN_OF), so the config tier can run."""

    def record(self) -> PlaceholderReplacement:
        """What the outcome's evidence says of it."""
        return PlaceholderReplacement(self.placeholder, self.role, self.value, list(self.flags), self.twin)


def plan(snippet) -> list[StoodIn]:
    """The snippet's placeholders that may be replaced (model, draft model, path); the others
    stay in the command (see `kept`)."""
    if not snippet.placeholders or snippet.kind == "subcommand":
        return []
    argv = snippet.argv
    parsed = parse_serve_args(argv)
    served = (
        parsed.model
        if parsed.model is not None
        else next((p for p in parsed.placeholders if not is_args_placeholder(p)), None)
    )
    draft = (parsed.speculative_config or {}).get("model")
    out: list[StoodIn] = []
    for p in snippet.placeholders:
        if served is not None and (p == served or p in served) and _in_argv(served, argv):
            out.append(StoodIn(served, "model", MODEL_NAME, _flags(served, argv) + _MODEL_FLAGS))
        elif isinstance(draft, str) and p in draft and any(p in w for w in argv):
            out.append(StoodIn(p, "draft model", f"placeholder-draft-{len(out)}", _flags(p, argv) + (SPEC_FLAG,)))
        elif _PATH_TEXT.search(p) and any(p in w for w in argv):
            path = f"{MISSING}{p if p.startswith('/') else '/' + re.sub(r'[^A-Za-z0-9._-]+', '-', p).strip('-')}"
            out.append(StoodIn(p, "path", path, _flags(p, argv)))
    return list({s.placeholder: s for s in out}.values())


def kept(snippet, stood: list[StoodIn]) -> list[str]:
    """The placeholders still in the command: every one a replacement does not cover."""
    covered = [s.placeholder for s in stood]
    return [p for p in snippet.placeholders if not any(p == c or p in c for c in covered)]


def apply(argv: list[str], stood: list[StoodIn]) -> list[str]:
    """The argv with each replacement in its placeholder's place: a model as a whole word (`model` is
    also part of option names), a path or draft wherever its text is (`name=/path/to/x`, JSON)."""
    out = []
    for word in argv:
        for s in stood:
            if s.role == "model":
                head, eq, tail = word.partition("=")
                word = (
                    s.value
                    if word == s.placeholder
                    else f"{head}={s.value}"
                    if eq and head.startswith("-") and tail == s.placeholder
                    else word
                )
            else:
                word = word.replace(s.placeholder, s.value)
        out.append(word)
    return out


def blamed(message: str, stood: list[StoodIn], flags: bool = True) -> StoodIn | None:
    """The replacement a message names (its value, its placeholder, or — with `flags`, for a failure — an
    option holding it: argparse may shorten the value), or None. A warning about the option itself
    (`--model` given as an option, not positionally) is the command's: `flags=False`."""
    text = message or ""
    for s in stood:
        named = any(re.search(re.escape(f) + r"(?![\w-])", text) for f in s.flags) if flags else False
        if named or any(t and t in text for t in (s.value, s.placeholder)):
            return s
    return None


def note(s: StoodIn) -> str:
    """What the outcome says about one replacement (shown on the command page)."""
    what = {
        "model": f"a random-weight twin of {TWIN_OF} for the config tier, not the reader's model"
        if s.twin
        else "a name: the parser reads only the word",
        "draft model": "a name: the parser reads only the word",
        "path": f"`{s.value}`, a path that does not exist",
    }[s.role]
    return f"{s.role}: placeholder `{s.placeholder}`, replaced by a stand-in ({what})"


def _in_argv(word: str, argv: list[str]) -> bool:
    return any(w == word or w.partition("=")[2] == word for w in argv)


def _flags(text: str, argv: list[str]) -> tuple[str, ...]:
    """The options whose value holds `text` (`--chat-template /path/to/x`, `--lora-modules a=/path/…`)."""
    found = []
    for i, word in enumerate(argv):
        head, eq, tail = word.partition("=")
        if eq and head.startswith("--") and text in tail:
            found.append(head.split(".", 1)[0])
        elif text in word and i > 0 and argv[i - 1].startswith("--"):
            found.append(argv[i - 1].split("=", 1)[0].split(".", 1)[0])
    return tuple(dict.fromkeys(found))
