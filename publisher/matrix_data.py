"""The matrix page's data (`matrix-data.js`): every command, grouped by the doc page it appears
on, with its judgement and one cell per build, in a compact form the page's script renders
(docs/javascripts/matrix.js). Nothing here is HTML: the script sets text, never markup, so docs
and log text cannot become code. Strings that repeat (causes, summaries) are stored once.

Layout (keep docs/javascripts/matrix.js in step):
  columns: [{key, name, version, commit, date, kind, label}]
  groups:  [[slug, title, where, rows]]; row = [id, command, model, kind, flags, judgement, summary (string), cells,
           options, runs]; a (string) is an index into `strings`
  cell:    0 (not run) or [verdict, stage, range text, cause (string), scope, stand_in, range in words (string or -1)]
  flags:   1 speculative config, 2 ran with a twin
  scope:   0 the page's versions (or unknown), 1 older, 2 newer than them
  options: indexes into `options` ([an option, a value or a key as the command gives it (flaghistory/uses.py),
           [[first, last] release indexes where it exists or the history cannot say]]) over `releases`
  runs:    [[version index into `versions`, verdict, stage, index into `buildKinds`]] for "my version"
"""

from __future__ import annotations

import json
import re

from driftmatrix.common.inert import strip_controls_in
from driftmatrix.common.versions import version_order
from driftmatrix.flaghistory.commands import shipped
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.flaghistory.uses import uses_of
from driftmatrix.publisher import addresses, causes, ranges, titles
from driftmatrix.publisher.command_view import CommandView, CommandViews
from driftmatrix.publisher.results import BUILD_KINDS, Results, build_kind
from driftmatrix.runner.outcomes import vocabulary
from driftmatrix.runner.outcomes.vocabulary import REAL, TIERS

SCOPES = {"in": 0, "unknown": 0, "older": 1, "newer": 2}


class _Strings:
    """A table of distinct strings: a cause shared by 300 cells is sent once."""

    def __init__(self):
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.items)
            self.items.append(text)
        return self._index[text]


def _ranges(flags: list[bool]) -> list[list[int]]:
    out: list[list[int]] = []
    for i, ok in enumerate(flags):
        if ok and out and out[-1][1] == i - 1:
            out[-1][1] = i
        elif ok:
            out.append([i, i])
    return out


class _Options:
    """Each option once, with the releases (indexes) whose `vllm serve` has it."""

    def __init__(self, history: FlagHistory | None):
        self.history = history
        self.table: list[list] = []
        self._index: dict[str, int] = {}

    def of(self, argv: list[str]) -> list[int]:
        """The command's options, values and keys (flaghistory/uses.py); a value the history cannot
        judge on a release counts as there (the selector never says "no" on a guess)."""
        if self.history is None:
            return []
        out = []
        uses = uses_of(self.history, argv)
        given = frozenset(u.option for u in uses)
        for use in uses:
            # a plugin option in the command can add names: the same text then reads differently
            name = use.text() + (" (with a plugin)" if use.kind == "value" and self._opened(use, given) else "")
            name = f"argument {name}" if use.kind == "argument" else name  # `--x 4` is a value's text too
            if name not in self._index:
                taken = [self.history.accepts_use(use, r, given) is not False for r in self.history.releases]
                if use.kind == "argument" and all(taken):
                    continue  # a well-formed value says nothing the option's own ranges do not
                self._index[name] = len(self.table)
                self.table.append([use.text(), _ranges(taken)])
            out.append(self._index[name])
        return out

    def _opened(self, use, given: frozenset[str]) -> bool:
        return bool(given & set(self.history.values.get(use.domain, {}).get("open_with") or ()))


def joined_command(command: str) -> str:
    """The command on one line, its `\\` line continuations dropped (the browser wraps it at spaces)."""
    return " ".join(re.sub(r"\\\s*\n", " ", command).split())


def _cell(v: CommandView, strings: _Strings, col, j):
    o = v.outcomes.get(col.key)
    if o is None:
        return 0
    check = next((k for k in j.checks if k.column.key == col.key), None)
    found = v.ranges[col.key]  # the view's: the same as matrix.json's
    detail = " ".join([causes.cause(o, limit=400), *causes.option_notes(o, v.snippet)]).strip()
    return [
        vocabulary.VERDICTS.index(o.verdict),
        TIERS.index(o.stage) if o.stage in TIERS else 0,
        found.text() if found else "",
        strings(detail),
        SCOPES[check.scope] if check else 0,
        1 if o.stand_in else 0,
        strings(found.words(col.kind)) if found else -1,
    ]


def _runs(known: ranges.Runs, sid: str, versions: dict[str, int]) -> list[list[int]]:
    """What the runs say for each version on the "my version" list."""
    out = []
    for k, kind in enumerate(BUILD_KINDS):
        for version, (verdict, stage) in (known.get((sid, kind)) or {}).items():
            if version in versions:
                out.append(
                    [
                        versions[version],
                        vocabulary.VERDICTS.index(verdict),
                        TIERS.index(stage) if stage in TIERS else 0,
                        k,
                    ]
                )
    return out


def _versions(history: FlagHistory | None, results: Results, known: ranges.Runs) -> list[str]:
    """Every version the selector offers, newest first: the releases read + every build run."""
    seen = set(history.releases if history else []) | {c.version for c in results.columns}
    seen |= {v for by_version in known.values() for v in by_version}
    return sorted(seen, key=version_order, reverse=True)


def build(commands: CommandViews) -> dict:
    results, known = commands.results, commands.runs
    history = shipped()
    strings, options = _Strings(), _Options(history)
    versions = _versions(history, results, known)
    index = {v: i for i, v in enumerate(versions)}
    kinds = sorted({s.kind for s in results.snippets})
    # grouped by kind of build (CPU, CUDA, image), oldest version first within a kind
    columns = sorted(results.columns, key=lambda c: BUILD_KINDS.index(c.kind))
    groups: dict[str, list] = {}
    for v in commands:
        s = v.snippet
        src = s.sources[0] if s.sources else None
        key = addresses.page_key(src) if src else "(no source)"
        group = groups.setdefault(
            key,
            [
                addresses.page_slug(key),
                titles.page_title(src) if src else key,
                f"{src.file} ({src.corpus} {src.version})" if src else "",
                [],
            ],
        )
        j = v.at_sources[0] if src else v.worst
        cells = [_cell(v, strings, c, j) for c in columns]
        # this publish's runs are in the cells already: the "my version" runs add the history's
        # and, for a version with no run, the option history answers in the page's script
        bits = (1 if s.speculative_config else 0) | (2 if any(c and c[5] for c in cells) else 0)
        group[3].append(
            [
                s.id,
                joined_command(v.command),
                s.model or "",
                kinds.index(s.kind),
                bits,
                vocabulary.JUDGEMENTS.index(j.kind),
                strings(j.summary),
                cells,
                options.of(s.argv or []) if s.kind != "subcommand" else [],  # `vllm serve`'s history
                _runs(known, s.id, index),
            ]
        )
    return {
        "schema": 1,
        "columns": [
            {
                "key": c.key,
                "name": c.name,
                "version": c.version,
                "commit": c.commit or "",
                "date": results.dates.get(c.key, ""),
                "kind": c.kind,
                "label": c.label,
            }
            for c in columns
        ],
        "buildKinds": list(BUILD_KINDS),
        "kinds": kinds,
        "verdicts": list(vocabulary.VERDICTS),
        "icons": vocabulary.ICONS,
        "meaning": vocabulary.VERDICT_MEANING,
        "stages": list(TIERS),
        "depth": {stage: list(words[:2]) for stage, words in vocabulary.DEPTH.items()},
        "judgements": list(vocabulary.JUDGEMENTS),
        "judgementMeaning": vocabulary.JUDGEMENT_MEANING,
        "strings": strings.items,
        "groups": sorted(groups.values(), key=lambda g: g[0]),
        "releases": history.releases if history else [],
        "options": options.table,
        "versions": versions,
        "real": list(REAL),
    }


def script(data: dict) -> str:
    """`matrix-data.js`: a script, not a JSON file, so the matrix works from a file:// copy too.
    `</` is escaped so no string can end a script element; the page shows its strings as text, so
    they carry no control character (common/inert.py)."""
    text = json.dumps(strip_controls_in(data), ensure_ascii=False, separators=(",", ":"))
    return "window.DM_MATRIX = " + text.replace("</", "<\\/") + ";\n"


__all__ = ["build", "script", "build_kind"]
