"""Files a command names inside vLLM's own tree, checked against the release its page is written for.

`--chat-template examples/tool_chat_template_llama3.1_json.jinja` is read by a reader working in a
checkout of that release: when the release's tree has no such file the command cannot run as
written, whatever the builds say of its other arguments. Such a page gets the `file-not-in-release`
lint (a breaking lint: doc-drift on every build, publisher/judgement.py) with its evidence: the path,
the release, where the file is in that release (the same name elsewhere in its tree) and which
releases looked at have the path.

What is checked, narrowly (a false alarm is worse than none):
- argv values (`--opt VALUE`, `--opt=VALUE`, a positional) whose first component is one of the
  folders a release tree here holds (extractor/sdist.py unpacks docs/, examples/, recipes/) and
  that folder exists in that release; relative paths only (`./` allowed, no `..`). Never a user's
  path, an absolute path, another project's tree (`vllm_omni/deploy/…`), nor a path the page
  itself writes (`cat > examples/x.yaml`, `tee`, `-o`).
- not `docker` commands (the path is read inside the image) nor fix candidates.
- the releases a source is written for: a release's docs (`==0.20.*`): that release; a range (a
  recipe's `>=0.19.1`, a page's `>=…`, the default): the releases of the range looked at (the
  stable release, the targets' pins, a release's docs being extracted); the lint only when none
  of them has the file. The nightly builds (docs of main): not checked (no release tree).
- a release tree is the docs tree being extracted when it is one (an sdist or a checkout, with its
  own examples/), else the release's sdist (driftmatrix.extractor.sdist.fetch_docs, cached). Where it cannot be
  had (offline), a `release-tree-unavailable` diagnostic, never a lint.
"""

from __future__ import annotations

import re
from dataclasses import astuple, dataclass, field
from pathlib import Path, PurePosixPath

from packaging.version import Version

from driftmatrix.common.versions import parse_version
from driftmatrix.extractor.snippet_record import Diagnostic, Lint, Snippet, Source
from driftmatrix.extractor.written_for import specifier

CODE = "file-not-in-release"
_KINDS = ("serve", "recipe", "subcommand", "python")


def named_paths(snippet: Snippet) -> list[str]:
    """The relative paths into vLLM's tree the command names (in argv order, each once)."""
    if snippet.kind not in _KINDS or snippet.fix is not None:
        return []
    from driftmatrix.extractor.sdist import KEEP_DIRS  # the top-level folders a release tree here holds (httpx: lazily)

    found = []
    for value in option_values(snippet.argv):
        path = value.removeprefix("./")
        parts = PurePosixPath(path).parts
        if (
            len(parts) >= 2
            and parts[0] in KEEP_DIRS
            and ".." not in parts
            and not path.startswith("/")
            and re.fullmatch(r"[\w./@+-]+", path)
            and path not in found
        ):
            found.append(path)
    return found


def option_values(argv: list[str]) -> list[str]:
    """Each argument as a value: `--opt=VALUE` gives VALUE, any other word itself (`--opt VALUE`'s
    VALUE is its own word)."""
    return [a.partition("=")[2] if a.startswith("-") and "=" in a else a for a in argv]


def release_of(version: str) -> Version | None:
    """A final release (`0.20.1`), None for anything else (a dev build, a git ref)."""
    v = parse_version(version)
    return None if v is None or v.is_prerelease or v.is_devrelease or v.local else v


@dataclass
class ReleaseTrees:
    """Each release's tree, found once: a local docs tree of that release, else its cached or fetched sdist."""

    cache_dir: Path
    """Where sdists are cached (`<cache>/sdists`)."""
    releases: list[str] = field(default_factory=list)
    """The releases looked at besides a page's own: the stable release and the targets' pins (a fixed
    set, so the same docs give the same lints and messages on every machine)."""
    local: dict[str, Path] = field(default_factory=dict)
    """Release -> a tree being extracted that holds its own examples/ (an sdist, a checkout)."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Release -> why its tree could not be had."""
    _found: dict[str, Path | None] = field(default_factory=dict)

    def tree(self, version: str) -> Path | None:
        if version not in self._found:
            self._found[version] = self.local.get(version) or self._fetch(version)
        return self._found[version]

    def _fetch(self, version: str) -> Path | None:
        from driftmatrix.extractor.sdist import release_tree  # httpx: lazily

        tree, why = release_tree(version, self.cache_dir)
        if why:
            self.unavailable[version] = why
        return tree

    def known(self) -> list[str]:
        """The releases looked at for a range, oldest first: `releases` and the local trees."""
        return sorted({v for v in {*self.releases, *self.local} if release_of(v)}, key=Version)


def releases_for(source: Source, trees: ReleaseTrees) -> list[str]:
    """The releases a source's page is written for that are looked at (oldest first)."""
    wf = source.written_for
    if wf is None or wf.basis == "nightly" or not wf.spec:
        return []
    spec = specifier(wf.spec)
    if wf.basis == "release":  # a release's own docs: that release
        return [source.version] if release_of(source.version) and source.version in spec else []
    return [v for v in trees.known() if Version(v) in spec]


def _has(tree: Path, path: str) -> bool:
    return (tree / path).is_file()


def _in_tree(tree: Path, path: str) -> bool:
    """The path's top-level folder is one of this release's (`recipes/` is not in an old release)."""
    return (tree / PurePosixPath(path).parts[0]).is_dir()


def moved_to(tree: Path, path: str, limit: int = 3) -> list[str]:
    """Files of the same top-level folder that are this one moved: the same name, or its name with a
    leading word turned into folders (`examples/template_vlm2vec_phi3v.jinja` ->
    `examples/pooling/embed/template/vlm2vec_phi3v.jinja`)."""
    top, name = PurePosixPath(path).parts[0], PurePosixPath(path).name
    stem = name.rsplit("_", 1)[-1]
    found = []
    for candidate in sorted((tree / top).rglob(f"*{stem}")):
        rel = candidate.relative_to(tree).as_posix()
        parts = PurePosixPath(rel).parts
        if rel != path and candidate.is_file() and any("_".join(parts[-k:]) == name for k in range(1, len(parts))):
            found.append(rel)
    return found[:limit]


def _where(path: str, trees: ReleaseTrees, versions: list[str]) -> str:
    """`there in vLLM 0.32.0 and 0.34.0` / `there since 0.32.0 of the releases looked at (not in 0.20.1)`."""
    have = [v for v in versions if (t := trees.tree(v)) is not None and _has(t, path)]
    lack = [v for v in versions if v not in have and trees.tree(v) is not None]
    if not have:
        return ""
    if lack and all(Version(v) < Version(have[0]) for v in lack):
        return f"since vLLM {have[0]} of the releases looked at (not in {_and(lack)})"
    return f"in vLLM {_and(have)}" + (f" (not in {_and(lack)})" if lack else "")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def message(path: str, missing: list[str], trees: ReleaseTrees) -> str:
    """The evidence, in one sentence: what is missing where, and where the file is."""
    others = [v for v in trees.known() if v not in missing]
    head = f"`{path}` is not in vLLM {_and(missing)}'s tree"
    head += " (each release looked at of those the page is written for)" if len(missing) > 1 else ""
    said = []
    elsewhere = _where(path, trees, others)
    if elsewhere:
        said.append(f"that path is there {elsewhere}")
    tree = trees.tree(missing[-1])
    moved = moved_to(tree, path) if tree is not None else []
    if len(moved) == 1:  # one candidate: where it is, and in which releases looked at
        where = _where(moved[0], trees, sorted({*missing, *others}, key=Version))
        said.append(f"it is at `{moved[0]}` {where}".rstrip())
    elif moved:  # several: named, none claimed to be it
        said.append(f"vLLM {missing[-1]} has files of that name at {', '.join(f'`{m}`' for m in moved)}")
    top = PurePosixPath(path).parts[0]
    tail = "; ".join(said) if said else f"no file of that name is in vLLM {missing[-1]}'s {top}/"
    return f"{head}: the command cannot read it as written; {tail}"


_WRITES = r"(?:>>?|\btee(?:\s+-a)?|\s-o|\s-O|--output(?:=|\s))\s*[\"']?(?:\./)?"


def page_writes(page: str, path: str) -> bool:
    """The page itself creates the file (`cat > examples/x.yaml`, `… | tee examples/x.yaml`, `-o`)."""
    return re.search(_WRITES + re.escape(path) + r"(?![\w./-])", page) is not None


def line_of(source: Source, path: str) -> int:
    at = source.text.find(path)
    return source.line + (source.text.count("\n", 0, at) if at >= 0 else 0)


def check(snippets: list[Snippet], trees: ReleaseTrees, page_text) -> list[Diagnostic]:
    """Add the `file-not-in-release` lint where a source's releases lack a file its command names;
    `page_text(source)` is the text of the source's page (or ""). Returns diagnostics (trees not had).
    Linear in the sources: what is the same for every source of a path (the trees' answers, the
    message, whether a page writes the file) is found once; a search of the whole page and a scan of
    the snippet's lints per source made a page repeating such a command cost its square."""
    diagnostics: dict[tuple, Diagnostic] = {}
    memo = _Memo(trees, page_text)
    for snippet in snippets:
        paths = named_paths(snippet)
        held = {astuple(lint) for lint in snippet.lints} if paths else set()
        for path in paths:
            for source in snippet.sources:
                lint = _check_source(path, source, memo, diagnostics)
                if lint is not None and astuple(lint) not in held:
                    held.add(astuple(lint))
                    snippet.lints.append(lint)
    return list(diagnostics.values())


class _Memo:
    """The answers `_check_source` asks for again and again, each found once per extraction."""

    def __init__(self, trees: ReleaseTrees, page_text):
        self.trees, self.page_text = trees, page_text
        self._files: dict[tuple[str, str], tuple[bool, bool]] = {}
        self._messages: dict[tuple[str, tuple[str, ...]], str] = {}
        self._writes: dict[tuple[str, str, str, str], bool] = {}

    def has(self, version: str, path: str) -> tuple[bool, bool]:
        """(the path's top folder is in that release's tree, the file is): the tree must be had."""
        if (version, path) not in self._files:
            tree = self.trees.tree(version)
            self._files[version, path] = (_in_tree(tree, path), _has(tree, path))
        return self._files[version, path]

    def message(self, path: str, looked: list[str]) -> str:
        key = (path, tuple(looked))
        if key not in self._messages:
            self._messages[key] = message(path, looked, self.trees)
        return self._messages[key]

    def writes(self, source: Source, path: str) -> bool:
        """`page_writes` of the source's page (the same page for the same corpus, version and file)."""
        key = (source.corpus, source.version, source.file, path)
        if key not in self._writes:
            self._writes[key] = page_writes(self.page_text(source), path)
        return self._writes[key]


def _check_source(path: str, source: Source, memo: _Memo, diagnostics: dict) -> Lint | None:
    trees = memo.trees
    looked = []
    for version in releases_for(source, trees):
        if trees.tree(version) is None:  # offline: said once per page and path, never a lint
            diagnostics.setdefault(
                (source.corpus, source.version, source.file, path),
                Diagnostic(
                    "warning",
                    "release-tree-unavailable",
                    f"`{path}`: the tree of vLLM {version} could not be had "
                    f"({trees.unavailable.get(version, 'unknown')}); not checked",
                    source.corpus,
                    source.version,
                    source.file,
                    line_of(source, path),
                ),
            )
            return None
        in_tree, has = memo.has(version, path)
        if not in_tree:
            continue  # a folder that release does not have here: not a path into its tree
        if has:
            return None
        looked.append(version)
    if not looked or memo.writes(source, path):
        return None
    return Lint(CODE, memo.message(path, looked), line_of(source, path), source.file, source.corpus, source.version)
