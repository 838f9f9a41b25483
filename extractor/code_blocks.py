"""Dispatch one code block to the reader for its language (Sybil-style: a parser per
language, each a small callable returning snippets and diagnostics)."""

from __future__ import annotations

import re
from collections.abc import Callable

from driftmatrix.extractor.commented import commented_commands
from driftmatrix.extractor.helm_values import from_yaml_fence, is_helm_values
from driftmatrix.extractor.python_calls import from_python
from driftmatrix.extractor.shell_commands import scan
from driftmatrix.extractor.snippet_builder import Place, from_shell_text
from driftmatrix.extractor.snippet_record import LEGACY_SERVER, Diagnostic, Snippet
from driftmatrix.extractor.vllm_commands import SPEC_FLAGS
from driftmatrix.extractor.yaml_commands import from_yaml_block

SHELL_LANGS = {
    "",
    "bash",
    "sh",
    "shell",
    "console",
    "zsh",
    "ksh",
    "shell-session",
    "shellsession",
    "bash-session",
    "sh-session",
    "terminal",
    "text",
    "txt",
    "plain",
    "plaintext",
    "none",
}
PYTHON_LANGS = {"python", "py", "python3", "pycon"}
YAML_LANGS = {"yaml", "yml"}
# Cheap prefilters: a block without these words cannot hold a snippet.
_SHELL_HINTS = ("vllm", "speculative", "-sc")
# What every reader below needs to find anything, as literal text (a positive test, never the reading):
# the server's CLI (`vllm` then `serve` past any non-word characters: a space, `\` and a line break,
# `", "` of an argv list, `\n  - ` of a YAML exec form), its module entry points, a vLLM image
# (docker_run / yaml_commands: `vllm/vllm-…`), a speculative config (its flags, `speculative_config=`),
# an argv list or exec form naming `vllm`, and the production stack's Helm values (helm_values).
_SERVER = re.compile(r"vllm[^\w]*serve")
_PAGE_WORDS = (
    "speculative",
    LEGACY_SERVER.rsplit(".", 2)[0],  # vllm.entrypoints (…openai.api_server, …cli.main)
    "vllm/vllm-",
    '"vllm"',
    "'vllm'",
    "- vllm",
    # `-sc ` / `-sc=` (the long flags say "speculative"; a bare `-sc` is in `--scaling-config` too)
    *(f + end for f in SPEC_FLAGS if not f.startswith("--speculative") for end in (" ", "=", "\t")),
)


def may_hold_snippet(text: str) -> bool:
    """Whether a page (or block) could give a snippet to any reader here: False only when none could,
    so a page that fails it is skipped unparsed (a third of the docs) and nothing is lost. The one rule:
    it is made of the readers' own words (LEGACY_SERVER, SPEC_FLAGS, is_helm_values)."""
    return any(w in text for w in _PAGE_WORDS) or _SERVER.search(text) is not None or is_helm_values(text)


def _shell(text: str, place: Place) -> tuple[list[Snippet], list[Diagnostic]]:
    if not any(h in text for h in _SHELL_HINTS):
        return [], []
    found = scan(text)
    snippets = from_shell_text(text, place, found=found)
    # `cat <<EOF | kubectl apply -f -`: the here-document is a manifest to read.
    for first, body in found.heredocs:
        if "vllm" in body:
            more, _ = from_yaml_block(body, place.at(place.line + first))
            snippets += more
    return snippets, []


Reader = Callable[[str, Place], tuple[list[Snippet], list[Diagnostic]]]


def reader_for(lang: str) -> Reader | None:
    if lang in SHELL_LANGS:
        return _shell
    if lang in PYTHON_LANGS:
        return from_python
    if lang in YAML_LANGS:
        return from_yaml_fence  # Helm values (extractor/helm_values.py), else extractor/yaml_commands.py
    return None


def snippets_from_block(lang: str, text: str, place: Place) -> tuple[list[Snippet], list[Diagnostic]]:
    """Snippets of one block; a failure in our own code becomes a diagnostic, never a crash."""
    reader = reader_for(lang)
    if reader is None:
        return [], []
    place = place.at(place.line, context=place.context or f"fence:{lang or 'plain'}")
    try:
        snippets, diagnostics = reader(text, place)
        return snippets + commented_commands(text, place), diagnostics
    except RecursionError as err:  # pathological nesting in the input
        message = f"input too deeply nested to read: {err}"
    except Exception as err:  # noqa: BLE001 — our bug; report it per block and go on
        message = f"internal error reading this {lang or 'plain'} block: {type(err).__name__}: {err}"
    return [], [Diagnostic("error", "internal-error", message, place.corpus, place.version, place.file, place.line)]
