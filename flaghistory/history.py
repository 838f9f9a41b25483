"""Reading a flag-history.json: which releases accept an option, and for how long a whole
command's options have been valid.

An option token is read the way vLLM's FlexibleArgumentParser reads it before argparse:
`--max_model_len` is `--max-model-len`, `--x.key=v` needs `--x` and the dotted syntax, `-O3`
needs `-O` or the `-O<level>` rewrite; then argparse's matching applies (exact, or a unique
prefix of a `--` option: its `allow_abbrev` is on in every release read).
"""

from __future__ import annotations

import json
import os
import re
from functools import cache, cached_property
from pathlib import Path

from packaging.version import Version

from driftmatrix.common.option_tokens import Token, matches, token  # noqa: F401 (Token, token: this module's readers use them)
from driftmatrix.common.versions import parse_version

SHIPPED = Path(__file__).resolve().parent / "data" / "flag-history.json"
READS = (1,)
ARGPARSE_OWN = {"-h", "--help"}
"""Every argparse parser has them; the history lists only what vLLM adds."""


class HistoryError(ValueError):
    """The file is not a flag history this driftmatrix reads."""


def default_path() -> Path:
    """The shipped copy, unless DRIFTMATRIX_FLAG_HISTORY names a fresher one (the workflow's)."""
    fresher = os.environ.get("DRIFTMATRIX_FLAG_HISTORY")
    return Path(fresher) if fresher and Path(fresher).is_file() else SHIPPED


class FlagHistory:
    def __init__(self, data: dict, path: Path | None = None):
        if data.get("schema") not in READS:
            raise HistoryError(
                f"{path or 'flag history'}: schema {data.get('schema')!r}; this driftmatrix reads {READS}"
            )
        self.data, self.path = data, path
        self.releases: list[str] = list(data["releases"])
        self.flags: dict[str, dict] = data["flags"]
        self._spans: dict[int, set[int]] = {}

    @classmethod
    def load(cls, path: Path | None = None) -> FlagHistory:
        path = path or default_path()
        try:
            return cls(json.loads(path.read_text()), path)
        except (OSError, ValueError, KeyError) as err:
            raise HistoryError(f"{path}: {err}") from None

    @cached_property
    def _versions(self) -> list[Version]:
        return [Version(r) for r in self.releases]

    @cached_property
    def _sets(self) -> dict[str, set[str]]:
        """release → its option strings."""
        versions = self._versions
        names: list[set[str]] = [set(ARGPARSE_OWN) for _ in self.releases]
        for name, record in self.flags.items():
            for i in _indexes(record, versions):
                names[i].add(name)
        return dict(zip(self.releases, names))

    def options(self, release: str) -> set[str]:
        """The option strings vLLM gives that release's serve parser."""
        return self._sets[release] - ARGPARSE_OWN

    def release_for(self, version: str) -> str | None:
        """The release whose options `version` has: itself, or for a build newer than every
        release read (a nightly), the newest release. None: before the first, or not read."""
        if version in self._sets:
            return version
        wanted = parse_version(version)
        if wanted is None or not self.releases:
            return None
        if wanted.public in self._sets:  # `0.20.1+cpu`: the release it was built from
            return wanted.public
        newest = self.releases[-1]
        return newest if wanted > Version(newest) else None  # a nightly after every release read

    def accepts(self, text: str, version: str) -> bool | None:
        """Does that release's serve parser accept the option? None: no release read for it."""
        release, parsed = self.release_for(version), token(text)
        if release is None or parsed is None:
            return None
        names = self._sets[release]
        if parsed.name == "-O" and parsed.syntax != "--option.key" and self.has_syntax("-O<level>", release):
            return True  # `-O3`, `-O 3`: rewritten to the optimisation option before argparse
        if parsed.syntax and not self.has_syntax(parsed.syntax, release):
            return False
        if parsed.name.startswith("--") or parsed.name in names:  # exact, or argparse's allow_abbrev
            return len(matches(parsed.name, names)) == 1
        return len(parsed.name) > 2 and parsed.name[:2] in names  # `-qawq`: `-q awq`, argparse's short form

    def has_syntax(self, feature: str, release: str) -> bool:
        record = self.data.get("syntax", {}).get(feature)
        return bool(record) and self.releases.index(release) in _indexes(record, self._versions)

    def record(self, text: str) -> dict | None:
        parsed = token(text)
        return self.flags.get(parsed.name) if parsed else None

    # -- values and keys (flag-history.json's `values` and `keys`; absent in older files) ---------
    @property
    def values(self) -> dict[str, dict]:
        return self.data.get("values") or {}

    @property
    def keys(self) -> dict[str, dict]:
        return self.data.get("keys") or {}

    @property
    def args(self) -> dict[str, dict]:
        """option → {spec: span}: what it takes after it (flaghistory/arg_types.py); absent in older files."""
        return self.data.get("args") or {}

    def arg_spec(self, option: str, release: str) -> str | None:
        """What the option takes after it in that release (`one:int`, `none`); None: not read there."""
        return next((spec for spec, span in self.args.get(option, {}).items() if self.within(span, release)), None)

    def argument(self, use, version: str):
        """driftmatrix.flaghistory.arguments.ArgumentAnswer for an `argument` use; None: the history cannot say."""
        from driftmatrix.flaghistory.arguments import judge

        release = self.release_for(version)
        spec = self.arg_spec(use.option, release) if release else None
        if spec is None or ARGUMENT_PLACEHOLDER.search(use.value or ""):
            return None
        return judge(spec, use.value, use.inline, use.after_model)

    @property
    def aliases(self) -> dict[str, str]:
        """Short option → its long option (`-cc` → `--compilation-config`); absent in older files."""
        return self.data.get("aliases") or {}

    def canonical(self, name: str) -> str:
        """The option's own name: itself, the long option a short alias stands for (`-cc`), or the one
        option a unique `--` prefix abbreviates."""
        if name in self.aliases:
            return self.aliases[name]
        found = matches(name, self.flags)
        return found[0] if len(found) == 1 else name

    def has_values(self, domain: str) -> bool:
        return domain in self.values

    def has_keys(self, option: str) -> bool:
        return option in self.keys

    def has_nested_keys(self, option: str, path: str) -> bool:
        return any(k.startswith(path + ".") for k in self.keys.get(option, {}).get("keys", {}))

    def within(self, record: dict | None, release: str) -> bool:
        """Is `release` (one the history read) inside the span (an option's, a value's, `read`, `closed`)?"""
        if not record:
            return False
        spans = self._spans.get(id(record))
        if spans is None:  # records live as long as self.data: their ids stay theirs
            spans = self._spans[id(record)] = _indexes(record, self._versions)
        return self._positions[release] in spans

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {r: i for i, r in enumerate(self.releases)}

    def accepts_use(self, use, version: str, command_options: frozenset[str] = frozenset()) -> bool | None:
        """Does that release take this option, value or key (flaghistory/uses.py)? None: the history
        cannot say — no release read for the version, the names were not read for that release, the
        value is a placeholder, a plugin option in the command can add names, the option's type admits
        any string (`open`), or vLLM ignores a key it lacks. Whether a known value *works* with the command's model is never answered here."""
        if use.kind == "option":
            return self.accepts(use.written, version)
        if use.kind == "argument":
            answer = self.argument(use, version)
            return answer.ok if answer else None
        release = self.release_for(version)
        if release is None:
            return None
        if use.kind == "key":
            domain = self.keys.get(use.option)
            if not self.within((domain or {}).get("read"), release):
                return None
            if self.within(domain["keys"].get(use.key), release):
                return True
            return False if self.within(domain.get("closed"), release) else None
        domain = self.values.get(use.domain)
        if not self.within((domain or {}).get("read"), release) or PLACEHOLDER.search(use.value or ""):
            return None
        if self.within(self.value_record(use), release):
            return True
        if self.within(domain.get("open"), release):  # typed `Literal | str` there: names beyond the set
            return None
        return None if command_options & set(domain.get("open_with") or ()) else False

    def removal(self, record: dict | None, version: str) -> str | None:
        """The release that removed it as `version` sees it: the record's `removed` at or before
        `version`, or the first release of the gap holding `version` (`--disable-log-requests`: removed
        in 0.17.0, taken again from 0.33.0 by vLLM's own action, flaghistory/action_pairs.py). None where
        `version` has it, is older than it, or is not a version."""
        wanted = parse_version(version)
        if not record or wanted is None:
            return None
        wanted = Version(wanted.public)  # `0.20.1+cpu`: the release it was built from
        if record.get("removed") and wanted >= _version(record["removed"]):
            return record["removed"]
        return next((a for a, b in record.get("gaps", []) if _version(a) <= wanted <= _version(b)), None)

    def value_record(self, use) -> dict | None:
        """The span (and vLLM's words) of a value or a key; None: no release read has it."""
        if use.kind == "key":
            return self.keys.get(use.option, {}).get("keys", {}).get(use.key)
        domain = self.values.get(use.domain) or {}
        fold = {"lower": str.lower, "upper": str.upper}.get(domain.get("fold") or "")
        value = fold(use.value) if fold and use.value else use.value  # the release folds case itself
        return domain.get("values", {}).get(value)

    def valid_range(self, options: list, command_options: frozenset[str] = frozenset()) -> tuple[str, str] | None:
        """First and last release of the newest unbroken run of releases accepting every option (an
        option string, or a driftmatrix.flaghistory.uses.Use: then an unanswered value counts as accepted)."""
        good = [all(self._takes(o, r, command_options) for o in options) for r in self.releases]
        if not any(good):
            return None
        last = len(good) - 1 - good[::-1].index(True)
        first = last
        while first > 0 and good[first - 1]:
            first -= 1
        return self.releases[first], self.releases[last]

    def first_accepting(self, options: list, after: str, command_options: frozenset[str] = frozenset()) -> str | None:
        """The first release newer than `after` that accepts every one of the options."""
        floor = parse_version(after)
        return next(
            (
                r
                for r, v in zip(self.releases, self._versions)
                if floor is not None and v > floor and all(self._takes(o, r, command_options) for o in options)
            ),
            None,
        )

    def _takes(self, item, release: str, command_options: frozenset[str]) -> bool:
        if isinstance(item, str):
            return bool(self.accepts(item, release))
        return self.accepts_use(item, release, command_options) is not False


PLACEHOLDER = re.compile(r"[<>${}]|^\.\.\.$|^(your|my)[-_]", re.I)
"""A value that stands for the reader's own (`<parser>`, `$PARSER`, `your_parser`): not judged."""
ARGUMENT_PLACEHOLDER = re.compile(r"<[^<>]*>|\$[{(]?\w|\$\(|^\.\.\.$|^(your|my)[-_]", re.I)
"""The same for an option's word, where braces are JSON's (`{"level": 3}`), not a placeholder's."""


@cache
def _version(text: str) -> Version:
    """Parsed once: the history names the same few dozen releases in thousands of spans."""
    return Version(text)


def _indexes(record: dict, versions: list[Version]) -> set[int]:
    """Positions in the release list where the option (or syntax) exists."""
    added = _version(record["added"])
    removed = _version(record["removed"]) if record.get("removed") else None
    gaps = [(_version(a), _version(b)) for a, b in record.get("gaps", [])]
    return {
        i
        for i, v in enumerate(versions)
        if v >= added and (removed is None or v < removed) and not any(a <= v <= b for a, b in gaps)
    }
