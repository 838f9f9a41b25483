"""The records the extractor writes: `snippets.json` (schema 2: schema 1 plus each source's
`written_for`; a schema-1 file is still read, its pages' versions then unrecorded). Each source's
`title` and `heading` are optional additions within schema 2: a file without them reads with both
empty, and a reader ignores source fields it does not know.

One dataclass per record, a docstring per field, plain JSON in and out, so the runner
and the publisher (possibly on other machines) read exactly what was written here.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

LEGACY_SERVER = "vllm.entrypoints.openai.api_server"
"""The legacy entry point of vLLM's OpenAI server (`python -m …`), read as the server."""

SCHEMA = 2
READS = (1, 2)
"""Schemas this driftmatrix reads (1: before `written_for`; a 1-only reader refuses 2 clearly)."""
SnippetKind = Literal["serve", "docker", "python", "recipe", "subcommand"]
"""What a snippet is (see `Snippet.kind`); the one list of snippet kinds."""
SNIPPET_KINDS: tuple[SnippetKind, ...] = get_args(SnippetKind)
KINDS: tuple[SnippetKind, ...] = ("serve", "docker", "python", "recipe")
"""The kinds the extract summary gives a column each (a `subcommand` snippet is counted in `snippets` only)."""


@dataclass
class Lint:
    """Something in the docs that bash or vLLM would read differently from the author."""

    code: str
    """Stable machine name, e.g. `backslash-not-continuation`, `key-value-not-json`."""
    message: str
    """One human sentence explaining what happens and what was assumed."""
    line: int | None = None
    """1-based line in `file` (relative while lexing, made absolute by the builder)."""
    file: str | None = None
    """Corpus-relative path of the file the lint is about."""
    corpus: str | None = None
    version: str | None = None
    """Corpus and version of that file (one snippet can appear in several versions)."""


BREAKING_LINTS = frozenset(
    {
        "backslash-not-continuation",  # `\` then blanks or `# …`: bash ends the command on that line
        "comment-hides-continuation",  # `# … \` inside the command: the `\` is the comment's, bash ends there
        "orphan-arguments",  # options on a line after the command ended: bash runs them as another command
        "folded-line-break",  # a YAML `>` block's more-indented line keeps its line break: the shell ends there
        "file-not-in-release",  # a file the command names is not in the tree of the release the page is for
        "fence-on-command-line",  # `vllm serve x  ````: the block never closes, the page shows the command with the
        # backquotes (bash: an unterminated command substitution) and the rest of the page inside it
        "python-syntax",  # a Python block holding vLLM usage that Python's parser rejects as pasted (dedented):
        # the reader gets Python's IndentationError/SyntaxError, not the engine (extractor/python_blocks.py)
    }
)
"""Lints that mean the command a reader runs is not the one the author meant (or cannot start):
the page is doc-drift on every build, whatever the builds say of the argv the author meant
(publisher/judgement.py). The one list; a lint not in it is a warning only.

Every hit in the corpora was read (issue 32: 0.20.1 and 0.33.0 docs, the recipes snapshot, the
0.34.0 sdist's docs and recipes): `backslash-not-continuation` — expert_parallel_deployment.md's
`\\ # comment` lines (4 commands in each docs version) and recipes GLM/GLM-V.md:32 (`\\ ` + blank);
`orphan-arguments` — recipes DeepSeek/DeepSeek-V3_1.md:34 (options under `vllm serve ...` with no
`\\`), and kthena.md, now `folded-line-break` (its `- >` block's options indented more); all real.
`comment-hides-continuation` has no hit; it is the same defect (bash ends the command there)."""


WrittenForBasis = Literal[
    "release", "nightly", "recipe", "page", "image", "fork", "site", "default", "override", "unrecorded"
]


@dataclass(frozen=True)
class WrittenFor:
    """The vLLM versions a page is written for: its commands are judged on those builds only
    (docs of 0.33.0 that use an option added in 0.31.0 are not wrong because 0.20.1 rejects it)."""

    spec: str
    """A PEP 440 version specifier: `==0.20.*` (a release's docs), `>=0.21.0` (a recipe or an
    install line), `>0.20.1` (docs of vLLM main: the nightly builds after the stable release).
    Pre-releases (nightly `.devN` builds) match. Empty: every build (`unrecorded`)."""
    origin: str
    """Where it came from, in words a reader can check (the install line and its line number,
    the recipe's `min_vllm_version`, the sdist's version, the command-line override)."""
    basis: WrittenForBasis = "default"
    """`release` (versioned docs), `nightly` (docs of main), `recipe` (its `min_vllm_version`),
    `page` (a statement on the page), `image` (the vLLM inside a pinned image whose tag names no
    version: `===<tag>`, no build of a version is it), `fork` (a fork's or a vendor's own build of vLLM that
    the page installs: `===fork:<name>`, no stock build or release history speaks for it), `site` (a site's own word: its README's "built on
    vLLM X"), `default` (today's stable and newer), `override` (`extract --written-for`), `unrecorded`
    (a snippets.json written before this field)."""


@dataclass
class Source:
    """One place where a snippet appears in the docs."""

    corpus: str
    """`vllm-docs`, `recipes`, `html` (a saved rendered page), `site` (another project's repository:
    a plugin's docs, a library's, a chart's), `markdown` or `model-card`."""
    version: str
    """Docs version (`0.33.0`), recipes ref (`8959cf6`), a site's git ref or folder name."""
    file: str
    """Path relative to the corpus root, POSIX separators."""
    line: int
    """1-based line in `file` where the command starts."""
    anchor: str | None
    """Id of the nearest heading above the snippet (as mkdocs renders it)."""
    url: str | None
    """The rendered page URL (with `#anchor`) where a reader sees the snippet."""
    text: str
    """The snippet exactly as written at this place (for display and annotation)."""
    context: str = ""
    """Where in the page: `fence:bash`, `yaml`, `recipe:features.spec_decoding`, ..."""
    written_for: WrittenFor | None = None
    """The vLLM versions this page is written for (set by the extractor for every source)."""
    title: str = ""
    """The doc page's title as a reader sees it, plain text (not HTML, not Markdown): a docs page's
    front matter `title:`, else its first `# ` heading, else its file name (`cpu.arm.inc.md`); a recipe's
    `meta.title`, else its `model.model_id`; a saved HTML page's `<h1>`, else its `<title>`. Empty in a
    snippets.json written before this field."""
    plugin: str = ""
    """The vLLM plugin the command is written for here (its site documents it, its image carries it,
    or its Markdown page installs it: common/vllm_plugins.py), or "": the values that plugin registers
    are not decided by a build without it. Absent in a snippets.json written before this field."""
    heading: str = ""
    """The text of the nearest heading above the snippet (where `anchor` points), plain text as the
    page shows it, without Markdown markup; for a command a recipe composes, the feature (and mode) or
    the variant, by its label (`Spec decoding (MTP)`, `Variant FP8 (Preview)`; the default command: empty).
    Empty when there is none, and in a snippets.json written before this field."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        known = {f.name for f in fields(cls)}  # a field added later is ignored, not a TypeError
        wf = data.get("written_for")
        return cls(
            **{
                **{k: v for k, v in data.items() if k in known},
                "written_for": WrittenFor(**wf) if isinstance(wf, dict) else None,
            }
        )


@dataclass
class Snippet:
    """One runnable thing the docs show; identical invocations share one record."""

    id: str
    """Stable hash of the normalized invocation (kind, canonical argv, env, image)."""
    kind: SnippetKind
    """`serve`, `docker`, `python`, `recipe`, or `subcommand` (another `vllm` subcommand given a
    speculative config: `vllm bench throughput …`, `vllm run-batch …`; see `subcommand`)."""
    argv: list[str]
    """Arguments after `vllm serve` exactly as bash would pass them (for `python`:
    the equivalent CLI arguments of the call's keyword arguments)."""
    env: dict[str, str]
    """Environment assignments the docs put in front of the command (or `-e` flags)."""
    model: str | None
    """The served model (positional or `--model`), or None when absent."""
    speculative_config: dict[str, Any] | None
    """The effective speculative config as vLLM's parser would build it, or None."""
    speculative_config_error: dict[str, Any] | None = None
    """When the config is not valid JSON: `{message, value, pos, lineno, colno}`."""
    placeholders: list[str] = field(default_factory=list)
    """Values the reader must fill in: `<MODEL>`, `{dir}`, `$VAR`, `${VAR}`, `$(cmd)`."""
    runnable: bool = True
    """False when the snippet cannot be run as written; see `reason`."""
    reason: str | None = None
    """Why it is not runnable (placeholder, fragment, unresolved Python, ...)."""
    lints: list[Lint] = field(default_factory=list)
    """Constructs bash or vLLM reads differently from what the author meant."""
    sources: list[Source] = field(default_factory=list)
    """Every place the snippet appears, in corpus order."""
    image: str | None = None
    """docker only: the image reference with tag, e.g. `vllm/vllm-openai:latest`."""
    docker_options: list[str] | None = None
    """docker only: the `docker run` options before the image (not part of the id)."""
    python: dict[str, Any] | None = None
    """python only: `{"call": "LLM", "kwargs": {...}}` as evaluated from the source."""
    recipe: dict[str, Any] | None = None
    """recipe only: `{"model_id", "variant", "features"}` the command was composed from."""
    subcommand: list[str] | None = None
    """subcommand only: the words after `vllm`, e.g. `["bench", "throughput"]`; `argv` holds
    the arguments after them. The runner checks it with that subcommand's own parser only."""
    wrapper: list[str] | None = None
    """Programs the docs run the command under, with their options, e.g. `["nsys", "profile",
    "-o", "report", "--trace=cuda"]` or `["numactl", "--cpunodebind=0"]`: recorded, never run."""
    fix: dict[str, Any] | None = None
    """A fix candidate (`driftmatrix fixes`, publisher/fixes.py), not a command from the docs:
    `{"of": the documented snippet's id, "edits": [[old text, new text], ...] on its source text,
    "why": [...], "tier": the tier its original was run with, "text": the fixed command}`; its
    outcomes are variant `fix`."""

    @property
    def entry_point(self) -> str | None:
        """The module the docs start the server with instead of `vllm serve` (LEGACY_SERVER, marked by
        its `legacy-entrypoint` lint), or None: such a command is parsed and run as that module is —
        its own parser, without `vllm serve`'s positional model rule."""
        return LEGACY_SERVER if any(lint.code == "legacy-entrypoint" for lint in self.lints) else None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or k in _ALWAYS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Snippet:
        """Read tolerantly: unknown keys are dropped, and a kind outside `SnippetKind` (a later
        extractor's) is kept as read; readers compare kinds by value, so it is treated as none they know."""
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known}
        kw["lints"] = [Lint(**x) for x in data.get("lints", [])]
        kw["sources"] = [Source.from_dict(x) for x in data.get("sources", [])]
        return cls(**kw)


_ALWAYS = {"model", "speculative_config", "reason"}


@dataclass
class Diagnostic:
    """A problem with an input file or a snippet that the extractor could not read."""

    severity: str
    """`error` (something was lost), `warning` (read, but suspicious) or `info` (read; a fact the
    reader may want, e.g. a Helm values entry the chart does not deploy)."""
    code: str
    """Stable machine name: `invalid-utf8`, `binary-file`, `too-large`, `yaml-error`, ..."""
    message: str
    """What went wrong, precisely enough to fix the input."""
    corpus: str = ""
    version: str = ""
    file: str = ""
    line: int | None = None


@dataclass
class CorpusInfo:
    """One extracted source tree or page."""

    name: str
    """`vllm-docs`, `recipes`, or `html`."""
    version: str
    """Docs version or recipes ref, as detected (PKG-INFO, .git, folder name)."""
    root: str
    """The path given on the command line."""
    layout: str = ""
    """What the SOURCE was detected as: `docs-tree`, `sdist`, `git` (a checkout of vLLM not at a
    release tag: main), `git-tag`, `recipes-repo`, `html-page`."""
    files: int = 0
    """Files read."""
    snippets: int = 0
    """Snippet occurrences found (before merging identical invocations)."""
    site: dict[str, str] | None = None
    """A `site` (another project's repository): `{name, repository, url_base, plugin}` as it says of
    itself (extractor/sites.py); "" where it does not say."""


_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")


@dataclass
class Catalog:
    """The whole `snippets.json`."""

    snippets: list[Snippet]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    corpora: list[CorpusInfo] = field(default_factory=list)
    generated_at: str = ""
    schema: int = SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "generated_at": self.generated_at,
            "corpora": [asdict(c) for c in self.corpora],
            "snippets": [s.to_dict() for s in self.snippets],
            "diagnostics": [asdict(d) for d in self.diagnostics],
        }

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> Catalog:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("schema") not in READS:
            raise ValueError(
                f"{path}: snippets schema {data.get('schema')!r}, this driftmatrix reads "
                f"{' and '.join(map(str, READS))}"
            )
        snippets = [Snippet.from_dict(s) for s in data["snippets"]]
        bad = [s.id for s in snippets if not _SAFE_ID.match(str(s.id))]
        if bad:  # ids name files on the site and branches of work: nothing path-like
            raise ValueError(f"{path}: snippet ids must be letters, digits, '-', '_' (got {bad[:3]!r})")
        return cls(
            snippets=snippets,
            diagnostics=[Diagnostic(**d) for d in data.get("diagnostics", [])],
            corpora=[CorpusInfo(**c) for c in data.get("corpora", [])],
            generated_at=data.get("generated_at", ""),
        )
