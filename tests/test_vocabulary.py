"""The verdict vocabulary has one home (runner/outcomes/vocabulary.py): no other module of the packages,
the benchmarks or the publisher's templates defines a verdict's, tier's or judgement's name list, icon
or words. Read from the source (ast), so a second table that creeps in is found before it drifts."""

from __future__ import annotations

import ast
from pathlib import Path

from driftmatrix.runner.outcomes import vocabulary
from driftmatrix.runner.outcomes.vocabulary import (
    DEPTH,
    GOOD,
    ICONS,
    JUDGEMENT_MEANING,
    JUDGEMENTS,
    PLAIN_STAGE,
    REAL,
    STAGE_TITLE,
    STATUS_LINE_DEPTH,
    STATUS_LINE_ICONS,
    TIERS,
    VERDICT_MEANING,
    VERDICTS,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("driftmatrix", "publisher", "runner", "extractor", "flaghistory", "common", "benchmarks")
HOME = Path(vocabulary.__file__).resolve()
WORD_SETS = {"verdicts": set(VERDICTS), "tiers": set(TIERS), "judgements": set(JUDGEMENTS)}
ICON_CHARS = {c for c in (*ICONS.values(), *STATUS_LINE_ICONS.values()) if not c.isascii() and c not in "–·"}
"""The icons no other text uses alone (`–`, `·` and `!` are ordinary punctuation elsewhere)."""


def _strings(nodes) -> list[str] | None:
    """The nodes' values when every one is a string constant, else None."""
    values = [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return values if len(values) == len(nodes) else None


def _which(words: list[str] | None) -> str | None:
    """The vocabulary `words` are all drawn from (two or more of them), or None."""
    if words is None or len(set(words)) < 2:
        return None
    return next((name for name, known in WORD_SETS.items() if set(words) <= known), None)


def definitions(source: str) -> list[str]:
    """What in `source` defines vocabulary: a dict keyed by verdicts, tiers or judgements; a tuple, list
    or set of them given a name; a `Literal[...]` of them; a string that is a verdict icon alone."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict) and None not in node.keys and (kind := _which(_strings(node.keys))):
            found.append(f"line {node.lineno}: a dict keyed by {kind}")
        elif (
            isinstance(node, (ast.Assign, ast.AnnAssign))
            and isinstance(node.value, (ast.Tuple, ast.List, ast.Set))
            and (kind := _which(_strings(node.value.elts)))
        ):
            found.append(f"line {node.lineno}: a named collection of {kind}")
        elif (
            isinstance(node, ast.Subscript)
            and getattr(node.value, "id", getattr(node.value, "attr", "")) == "Literal"
            and (kind := _which(_strings(node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice])))
        ):
            found.append(f"line {node.lineno}: a Literal of {kind}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip() in ICON_CHARS:
            found.append(f"line {node.lineno}: the icon {node.value!r}")
    return found


def test_the_vocabulary_is_defined_in_one_module():
    elsewhere = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.resolve() != HOME and (found := definitions(path.read_text(encoding="utf-8"))):
                elsewhere[str(path.relative_to(ROOT))] = found
    assert not elsewhere, f"verdict vocabulary defined outside runner/outcomes/vocabulary.py: {elsewhere}"


def test_the_templates_take_icons_from_it():
    written = {
        str(p.relative_to(ROOT)): sorted(c for c in ICON_CHARS if c in p.read_text(encoding="utf-8"))
        for p in sorted((ROOT / "publisher" / "templates").glob("*"))
    }
    assert not {path: icons for path, icons in written.items() if icons}, "use the `icons` the page is given"


def test_the_scan_finds_a_second_table():
    """The checks above can fail: each kind of definition is found, its uses are not."""
    second = (
        'ICON = {"PASS": "ok", "FAIL": "no"}\nDONE = ("PASS", "WARN")\nWORDS = {"parse": "p", "start": "s"}\n'
        'Kind = Literal["ok", "unknown"]\nMARK = "✘"\n'
    )
    assert sorted(f.split(":")[0] for f in definitions(second)) == [f"line {n}" for n in (1, 2, 3, 4, 5)]
    used = 'if o.verdict in ("FAIL", "SKIP"):\n    x = ICONS["PASS"] + " passed"\nrow = {"verdict": "PASS", "x": 1}\n'
    assert definitions(used) == []


def test_its_tables_cover_every_word_in_order():
    assert list(ICONS) == list(VERDICT_MEANING) == list(STATUS_LINE_ICONS) == list(VERDICTS)
    assert list(DEPTH) == list(STAGE_TITLE) == list(PLAIN_STAGE) == list(STATUS_LINE_DEPTH) == list(TIERS)
    assert list(JUDGEMENT_MEANING) == list(JUDGEMENTS)
    assert GOOD == REAL[: len(GOOD)] and set(REAL) < set(VERDICTS)
    assert [vocabulary.stage_rank(t) for t in TIERS] == list(range(len(TIERS))) and vocabulary.stage_rank(
        "warmup"
    ) == -1
