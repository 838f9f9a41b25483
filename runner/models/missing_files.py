"""A file the docs name that is not where the command runs (issue 58 point 6): the reader's own chat
template, one of vLLM's source tree that this build's sdist lacks, a path on the reader's machine or in
their container. vLLM's validation stops at the first of them (0.32.0: "The supplied chat template
string (./t.jinja) appears path-like, but doesn't exist!"), so a SKIP there hid every other option of
the command — a removed tool-call parser among them. A minimal template of ours stands in for the
parser and the engine config; the server is never started on it (the job SKIPs at start, saying what
the file is), and a FAIL of anything else stands."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from driftmatrix.runner.builds.source_trees import DIRS

FILE_OPTIONS = ("--chat-template",)
"""The options whose value vLLM opens as a file when it is path-like (a template may also be given inline)."""
STAND_IN_TEMPLATE = "{% for message in messages %}{{ message['content'] }}\n{% endfor %}"
"""What stands in for a chat template that is not here: valid Jinja, every message's content."""


@dataclass(frozen=True)
class MissingFile:
    option: str
    """The option that names it (`--chat-template`)."""
    value: str
    """The path as the docs write it."""

    @property
    def kind(self) -> str:
        """What the file is, for the reader: whose it is and where it would be."""
        if self.value.startswith(DIRS):
            return "a file of vLLM's source tree that this build's release sdist does not have"
        if self.value.startswith(("/", "~")):
            return "a path on the reader's machine or in their container"
        return "the reader's own file"

    def skip_reason(self) -> str:
        return (
            f"{self.option} {self.value} is {self.kind}, not here: the server is not started on a stand-in "
            "(the parser and the engine config ran with a minimal template in its place)"
        )

    def note(self) -> str:
        return f"{self.option} {self.value} ({self.kind}): a minimal template of ours stood in for the parser and the engine config"


def missing(argv: list[str], present: dict[str, str]) -> list[MissingFile]:
    """The files of FILE_OPTIONS the command names that nothing substituted (`present`: what prepare
    has found for it). A runner never hands a host path through, so whatever it did not find is missing."""
    found = []
    for i, word in enumerate(argv):
        name, eq, inline = word.partition("=")
        if name not in FILE_OPTIONS:
            continue
        value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else None)
        if value is not None and _path_like(value) and value not in present:
            found.append(MissingFile(name, value))
    return found


def _path_like(value: str) -> bool:
    """A path, not a template written inline (vLLM opens the first kind, renders the second)."""
    return "{" not in value and ("/" in value or value.endswith((".jinja", ".jinja2", ".j2")))


def stand_in(cache_dir: Path) -> str:
    """Our stand-in template, in the twins' folder (the helper's sandbox binds it)."""
    path = cache_dir / "standins" / "files" / "chat-template.jinja"
    if not path.is_file() or path.read_text() != STAND_IN_TEMPLATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")  # whole for any other worker reading it
        part.write_text(STAND_IN_TEMPLATE)
        os.replace(part, path)
    return str(path)
