"""Turn a found invocation (words + where it was found) into a `Snippet` record."""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import shlex
import textwrap
from dataclasses import dataclass, replace
from typing import Any

from driftmatrix.extractor.bounds import MAX_COMMANDS_PER_LINE
from driftmatrix.extractor.markdown_sources import is_relative_model
from driftmatrix.extractor.serve_args import AMBIENT_VARS, ServeArgs, parse_serve_args, placeholders_in
from driftmatrix.extractor.shell_commands import Invocation, ShellScan, assigned_names, scan
from driftmatrix.extractor.shell_lexer import Word
from driftmatrix.extractor.snippet_record import LEGACY_SERVER, Lint, Snippet, SnippetKind, Source


@dataclass(frozen=True)
class Place:
    """Where a block of text sits in the corpus; `line` is the block's first file line."""

    corpus: str
    version: str
    file: str
    line: int
    anchor: str | None = None
    url: str | None = None
    """The page URL, without fragment."""
    context: str = ""
    line_links: bool = False
    """Link to the line (`?plain=1#L12` on GitHub) rather than to the heading anchor."""
    title: str = ""
    """The page's title (`Source.title`); a Markdown page's is set once the page is read."""
    heading: str = ""
    """The nearest heading's text (`Source.heading`)."""
    model_id: str = ""
    """A model card's own model: `vllm serve` without a model, or with a relative path, serves it."""
    placeholder_models: frozenset[str] | None = None
    """The words that stand for the reader's model on this page (None: the shipped ones)."""

    def source(self, offset: int, text: str) -> Source:
        line = self.line + offset
        url = self.url
        if url and self.line_links:
            url = f"{url}?plain=1#L{line}"
        elif url and self.anchor:
            url = f"{url}#{self.anchor}"
        return Source(
            self.corpus,
            self.version,
            self.file,
            line,
            self.anchor,
            url,
            text,
            self.context,
            title=self.title,
            heading=self.heading,
        )

    def at(self, line: int, **changes: Any) -> Place:
        return replace(self, line=line, **changes)


def shell_text(argv: list[str], env: dict[str, str]) -> str:
    """The `vllm serve` command line a reader would type for composed argv/env."""
    prefix = "".join(f"{name}={shlex.quote(value)} " for name, value in env.items())
    return f"{prefix}vllm serve {shlex.join(argv)}"


def normalize_image(image: str) -> str:
    image = image.removeprefix("docker.io/")
    if "$" in image:  # `"$IMAGE"`: the reader's, no tag to add
        return image
    last = image.rsplit("/", 1)[-1]
    return image if ":" in last or "@" in last else image + ":latest"


_ID_PREFIX = {"subcommand": "c"}  # `s-` is serve's


def snippet_id(kind: str, canonical_argv: list[str], env: dict[str, str], image: str | None) -> str:
    """A stable id: the same invocation on another page or docs version hashes the same."""
    key = {"kind": kind, "argv": canonical_argv, "env": sorted(env.items())}
    if image is not None:
        key["image"] = image
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return f"{_ID_PREFIX.get(kind, kind[0])}-{digest[:12]}"


def build(
    kind: SnippetKind,
    argv: list[str],
    env: dict[str, str],
    source: Source,
    *,
    expansions: list[list[str]] | None = None,
    env_expansions: dict[str, list[str]] | None = None,
    lints: list[Lint] = (),
    image: str | None = None,
    image_expansions: list[str] = (),
    docker_options: list[str] | None = None,
    python: dict[str, Any] | None = None,
    recipe: dict[str, Any] | None = None,
    extra_placeholders: list[str] = (),
    fragment: bool = False,
    wrapper: list[str] | None = None,
    subcommand: list[str] | None = None,
    placeholder_models: frozenset[str] | None = None,
) -> Snippet:
    """Assemble a snippet from final argv/env; `expansions[i]` belongs to `argv[i]`."""
    expansions = expansions or [[] for _ in argv]
    written_env, env = env, _without_ambient_placeholders(env, env_expansions or {})
    parsed = parse_serve_args(argv, placeholder_models=placeholder_models)
    placeholders: list[str] = [*extra_placeholders, *parsed.placeholders]
    for word, exps in zip(argv, expansions):
        placeholders += placeholders_in(word, exps)
    for name, value in env.items():
        if name not in AMBIENT_VARS:  # the runner's own (or none): nothing for the reader to fill in
            placeholders += placeholders_in(value, (env_expansions or {}).get(name, []))
    if image:
        placeholders += placeholders_in(image, list(image_expansions))  # `vllm-openai-rocm:<tag>`, `"$IMAGE"`
    placeholders = list(dict.fromkeys(placeholders))
    all_lints = [
        replace(lint, file=source.file, corpus=source.corpus, version=source.version)
        for lint in (*lints, *parsed.lints)
    ]
    for lint in all_lints:
        lint.line = source.line if lint.line is None else lint.line

    image = normalize_image(image) if image else None
    reason = _not_runnable(fragment, all_lints, placeholders, parsed, argv)
    if reason is None and parsed.model is None and kind in ("serve", "docker", "recipe"):
        all_lints.append(
            Lint(
                "no-model",
                "no model is given: vLLM serves its built-in default model",
                source.line,
                source.file,
                source.corpus,
                source.version,
            )
        )

    return Snippet(
        # the env as written: a command keeps its id whatever is dropped from the record's env
        # the legacy entry point is another command than `vllm serve` with the same words (its own parser)
        id=snippet_id(
            "serve" if fragment else kind,
            [*(subcommand or []), *_entry(all_lints), *parsed.canonical()],
            written_env,
            image,
        ),
        kind=kind,
        argv=list(argv),
        env=dict(env),
        model=parsed.model,
        speculative_config=parsed.speculative_config,
        speculative_config_error=parsed.speculative_config_error,
        placeholders=placeholders,
        runnable=reason is None,
        reason=reason,
        lints=_dedupe(all_lints),
        sources=[source],
        image=image,
        docker_options=docker_options,
        python=python,
        recipe=recipe,
        subcommand=subcommand,
        wrapper=wrapper,
    )


def _entry(lints: list[Lint]) -> list[str]:
    """The entry point's words that make a command another one (Snippet.entry_point)."""
    return [LEGACY_SERVER] if any(lint.code == "legacy-entrypoint" for lint in lints) else []


def _without_ambient_placeholders(env: dict[str, str], expansions: dict[str, list[str]]) -> dict[str, str]:
    """`HF_TOKEN: <your-hf-token>`: the reader's own secret, which the runner supplies from its own
    (AMBIENT_VARS); a runnable command does not carry the placeholder text as its value."""
    return {
        name: value
        for name, value in env.items()
        if name not in AMBIENT_VARS or not placeholders_in(value, expansions.get(name, []))
    }


def _not_runnable(
    fragment: bool, lints: list[Lint], placeholders: list[str], parsed: ServeArgs, argv: list[str]
) -> str | None:
    """Why the snippet cannot be run as written, or None."""
    if fragment:
        return "fragment: a `--speculative-config` value shown without a `vllm serve` command"
    unbalanced = next((lint.message for lint in lints if lint.code == "unbalanced-quote"), None)
    if unbalanced:
        return unbalanced
    if placeholders:
        return "placeholder: " + ", ".join(placeholders)
    config = next((o for o in parsed.options if o.name == "--config"), None)
    if config is not None:
        return f"needs a local file: --config {' '.join(config.values)}"
    if any(a == "--help" or a.startswith("--help=") or a == "-h" for a in argv):
        return "help invocation: prints help, serves nothing"
    return None


def _dedupe(lints: list[Lint]) -> list[Lint]:
    seen, out = set(), []
    for lint in lints:
        key = (lint.code, lint.file, lint.line, lint.message)
        if key not in seen:
            seen.add(key)
            out.append(lint)
    return out


def from_shell_text(
    text: str, place: Place, extra_env: dict[str, str] | None = None, found: ShellScan | None = None
) -> list[Snippet]:
    """Every serve/docker/fragment snippet in a shell block starting at `place.line`
    (`extra_env`: variables the surrounding file sets, e.g. a k8s container's `env`;
    `found`: the block's scan, when the caller already has it). Linear in the block: what each
    command needs of the whole block (its lints, its lines, the names the block assigns) is looked
    up, not searched for again per command."""
    found = found or scan(text)
    lines = text.split("\n")
    lints_in = _LintsByLine(found.lints)
    assigned = _Assigned(text)
    raws: dict[tuple[int, int], str] = {}  # commands sharing a line (`a; b`) share its text
    per_span: dict[tuple[int, int], int] = {}
    out = []
    for inv in found.invocations:
        span = (inv.line, inv.end_line)
        per_span[span] = per_span.get(span, 0) + 1
        if per_span[span] > MAX_COMMANDS_PER_LINE:  # bounded output: see extractor/bounds.py
            _left_out(out[-1], span, place)
            continue
        _fill_defaults(inv, assigned)
        inv.env = (extra_env or {}) | inv.env
        if place.model_id and inv.kind in ("serve", "docker"):
            _card_model(inv, place.model_id)
        lints = lints_in.between(inv.line, inv.end_line) + inv.lints
        lints = [replace(lint, line=place.line + lint.line) for lint in lints]
        if span not in raws:
            raws[span] = textwrap.dedent("\n".join(lines[inv.line : inv.end_line + 1])).strip("\n")
        out.append(_from_invocation(inv, place.source(inv.line, raws[span]), lints, place.placeholder_models))
    return out


def _left_out(last: Snippet, span: tuple[int, int], place: Place) -> None:
    """Say once, on the last command kept of a line, that the line's further commands were left out."""
    line = place.line + span[0]
    if not any(lint.code == "commands-left-out" and lint.line == line for lint in last.lints):
        last.lints.append(
            Lint(
                "commands-left-out",
                f"more than {MAX_COMMANDS_PER_LINE} commands on this line: the rest are left out (bounded input)",
                line,
            )
        )


class _LintsByLine:
    """A block's lints, found by line range in O(log n) (in their own order)."""

    def __init__(self, lints: list[Lint]):
        self.lints = lints
        self.placed = sorted((lint.line, i) for i, lint in enumerate(lints) if lint.line is not None)
        self.lines = [line for line, _ in self.placed]

    def between(self, first: int, last: int) -> list[Lint]:
        lo, hi = bisect.bisect_left(self.lines, first), bisect.bisect_right(self.lines, last)
        return [self.lints[i] for i in sorted(i for _, i in self.placed[lo:hi])]


_DEFAULTED = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*):?-([^$`{}\\]*)\}$")


class _Assigned:
    """The names a block assigns (shell_commands.assigned_names), found when first asked: a search of
    the whole block per `${NAME:-default}` was quadratic."""

    def __init__(self, text: str):
        self.text = text
        self.names: frozenset[str] | None = None

    def __contains__(self, name: str) -> bool:
        if self.names is None:
            self.names = assigned_names(self.text)
        return name in self.names


def _fill_defaults(inv: Invocation, assigned: _Assigned) -> None:
    """`${PORT:-8000}` is 8000 in the reader's shell, where PORT is unset (bash's default value): the
    word takes its default, unless the block itself assigns the variable (`assigned`: the names the
    block assigns). Other expansions stay."""

    def filled(word: Word) -> Word:
        kept, out = [], word.text
        for exp in word.expansions:
            m = _DEFAULTED.match(exp)
            if m and exp in out and m[1] not in assigned:
                out = out.replace(exp, m[2], 1)
            else:
                kept.append(exp)
        return word if len(kept) == len(word.expansions) else Word(out, word.line, kept, word.quoted)

    inv.args = [filled(w) for w in inv.args]
    inv.env_words = [filled(w) for w in inv.env_words]
    for word in inv.env_words:
        name, _, value = word.text.partition("=")
        if name in inv.env:
            inv.env[name] = value


def _card_model(inv: Invocation, model_id: str) -> None:
    """On a model card, `vllm serve` with no model or a relative path (`.`) serves the card's model."""
    first = inv.args[0] if inv.args else None
    if first is not None and is_relative_model(first.text):
        inv.args = [Word(model_id, first.line), *inv.args[1:]]
    elif parse_serve_args([w.text for w in inv.args]).model is None and not any(
        w.text.split("=", 1)[0] == "--model" for w in inv.args
    ):
        inv.args = [Word(model_id, inv.line), *inv.args]


def _from_invocation(
    inv: Invocation, source: Source, lints: list[Lint], placeholder_models: frozenset[str] | None
) -> Snippet:
    if inv.within:  # a command nested in a string: say where, the line is already the string's
        source.context = f"{source.context} in {inv.within}" if source.context else inv.within
    return build(
        inv.kind if inv.kind in ("docker", "subcommand") else "serve",
        [w.text for w in inv.args],
        inv.env,
        source,
        expansions=[w.expansions for w in inv.args],
        env_expansions={w.text.split("=", 1)[0]: w.expansions for w in inv.env_words},
        lints=lints,
        image=inv.image,
        image_expansions=inv.image_expansions,
        docker_options=inv.docker_options if inv.kind == "docker" else None,
        fragment=inv.kind == "fragment",
        wrapper=inv.wrapper or None,
        subcommand=inv.subcommand,
        placeholder_models=placeholder_models,
    )
