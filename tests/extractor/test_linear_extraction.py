"""Extraction is linear in what a page repeats (issue 44): a docs page is untrusted, and a page that
repeats a command (or a heading, an install line, a YAML scalar, a Python string…) N times must cost
work proportional to N, not N² (the merge compared every source with every other: 10,000 copies of a
command took 84 s, a 5 MiB page about 1.4 h).

Work is counted, never timed (speed is measured in benchmarks/extract_repeats.py): the Python lines
and calls the extraction executes (`sys.settrace`), deterministic for a given page. Extracting N, 2N
and 4N repeats, linear work grows by the same amount each doubling plus the same again (ratio 2 of
the increments); N² work grows by 4x the increment. The sizes are small and still tell: at N=100
(the recipe: 200) the extractor before issue 44 gave 2.4 to 4.0 per shape (its merge alone, on the
shapes that repeat one command, 2.2 to 2.9), and more as N grows; this one gives 2.0."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from driftmatrix.extractor.catalog import extract, merge
from driftmatrix.extractor.release_files import CODE, ReleaseTrees
from driftmatrix.extractor.snippet_record import Lint, Snippet, Source
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import SEED_CPU

CMD = "vllm serve org/m --max-model-len 256"
LINEAR = 2.2
"""The most the work's increment may grow by from one doubling of the page to the next (linear: 2.0)."""


def markdown(body: Callable[[int], str]) -> Callable[[Path, int], Path]:
    def make(folder: Path, n: int) -> Path:
        page = folder / "page.md"
        page.write_text("# Page\n\n" + body(n))
        return page

    return make


def recipe(folder: Path, n: int) -> Path:
    """A recipes checkout whose one recipe has n opt-in features (a command each)."""
    (folder / "models" / "org").mkdir(parents=True)
    (folder / "taxonomy.yaml").write_text("features: {}\n")
    features = "".join(f"  f{i}:\n    args: [--max-num-seqs, '{i}']\n" for i in range(n))
    opt_in = "".join(f"  - f{i}\n" for i in range(n))
    (folder / "models" / "org" / "m.yaml").write_text(
        f"model:\n  model_id: org/m\nfeatures:\n{features}opt_in_features:\n{opt_in}"
    )
    return folder


SHAPES: dict[str, Callable[[Path, int], Path]] = {
    "a command per block": markdown(lambda n: f"```bash\n{CMD}\n```\n\n" * n),
    "commands in one block": markdown(lambda n: "```bash\n" + f"{CMD}\n" * n + "```\n"),
    "a heading per command (mkdocs ids h, h_1, h_2…)": markdown(lambda n: f"## H\n\n```bash\n{CMD}\n```\n\n" * n),
    "an install line per command": markdown(lambda n: f"pip install vllm==0.20.1\n\n```bash\n{CMD}\n```\n\n" * n),
    "a lint per command in one block": markdown(lambda n: "```bash\n" + f"{CMD} \\  \n  --port 1\n" * n + "```\n"),
    "folded YAML scalars": markdown(lambda n: "```yaml\n" + f"- >\n  {CMD}\n  --port 1\n" * n + "```\n"),
    "Python command strings": markdown(lambda n: "```python\n" + f"x = '{CMD}'\n" * n + "```\n"),
    "Python engine calls": markdown(
        lambda n: (
            "```python\n"
            + "".join(f"m{i} = 'a/b'\nLLM(model=m{i}, speculative_config={{'method': 'ngram'}})\n" for i in range(n))
            + "```\n"
        )
    ),
    "one long command, `vllm` in it n times": markdown(
        lambda n: f"```bash\n{CMD}\nfoo \\\n" + "  vllm x \\\n" * n + "  --port 1\n```\n"
    ),
    "recipe features": recipe,
}


def work(fn: Callable[[], object]) -> int:
    """The Python lines and calls `fn()` executes (trace events)."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return count


def growth(make: Callable[[Path, int], Path], folder: Path, n: int, **options) -> float:
    """How much the increment of work grows from N->2N to 2N->4N (2.0: linear; 4.0: quadratic)."""

    def extraction(size: int) -> int:
        (folder / str(size)).mkdir(parents=True)
        source = make(folder / str(size), size)
        return work(lambda: extract([source], workers=1, stable=stable_pin(SEED_CPU), **options))

    extraction(2)  # imports, compiled regexes and caches: the first extraction's own
    small, middle, large = (extraction(size) for size in (n, 2 * n, 4 * n))
    return (large - middle) / (middle - small)


@pytest.mark.parametrize("shape", SHAPES)
def test_work_grows_linearly_with_what_a_page_repeats(shape, tmp_path):
    n = 200 if shape == "recipe features" else 100  # a recipe's feature is little work: more of them to tell
    assert growth(SHAPES[shape], tmp_path, n) <= LINEAR


def test_files_named_by_repeated_commands_are_checked_in_linear_work(tmp_path):
    """Each source of a command naming a file missing from its release gets the lint's check."""
    tree = tmp_path / "release"
    (tree / "examples").mkdir(parents=True)
    (tree / "docs").mkdir()
    make = markdown(lambda n: f"```bash\n{CMD} --chat-template examples/missing.jinja\n```\n\n" * n)
    trees = ReleaseTrees(tmp_path / "cache", [stable_pin(SEED_CPU)], local={stable_pin(SEED_CPU): tree})
    assert growth(make, tmp_path / "pages", 100, release_trees=trees) <= LINEAR
    catalog, _ = extract([make(tmp_path, 3)], workers=1, stable=stable_pin(SEED_CPU), release_trees=trees)
    assert [(lint.code, lint.line) for lint in catalog.snippets[0].lints] == [(CODE, 4), (CODE, 8), (CODE, 12)]


@pytest.mark.parametrize("shape", ["a command per block", "commands in one block"])
def test_repeats_merge_into_one_snippet_with_every_source_in_page_order(shape, tmp_path):
    n = 500
    catalog, _ = extract([SHAPES[shape](tmp_path, n)], workers=1, stable=stable_pin(SEED_CPU))
    [snippet] = catalog.snippets
    lines = [source.line for source in snippet.sources]
    first, step = (4, 4) if shape == "a command per block" else (4, 1)
    assert lines == [first + step * i for i in range(n)]
    assert {(s.file, s.text, s.anchor, s.url) for s in snippet.sources} == {("page.md", CMD, "page", None)}
    assert snippet.argv == ["org/m", "--max-model-len", "256"] and snippet.lints == []


def old_merge(snippets: list[Snippet]) -> list[Snippet]:
    """The merge as it was before issue 44 (list membership), the specification of its records."""
    by_id: dict[str, Snippet] = {}
    for snippet in snippets:
        known = by_id.get(snippet.id)
        if known is None:
            by_id[snippet.id] = snippet
            continue
        known.sources += [s for s in snippet.sources if s not in known.sources]
        known.lints += [lint for lint in snippet.lints if lint not in known.lints]
        known.placeholders = list(dict.fromkeys(known.placeholders + snippet.placeholders))
        if known.runnable and not snippet.runnable:
            known.runnable, known.reason = False, snippet.reason
    return list(by_id.values())


def sample() -> list[Snippet]:
    """Snippets with repeated sources and lints (equal in content, distinct objects), placeholders,
    runnable and not, and a source repeated within one snippet."""

    def source(line: int) -> Source:
        return Source("markdown", "", "p.md", line, "h", None, f"vllm serve m{line % 2}")

    def lint(line: int) -> Lint:
        return Lint("orphan-arguments", "m", line, "p.md", "markdown", "")

    out = []
    for i in range(12):
        snippet = Snippet(
            f"s-{i % 2}",
            "serve",
            ["m"],
            {},
            "m",
            None,
            placeholders=[f"<P{i % 3}>", "<Q>"],
            runnable=i % 5 != 4,
            reason=None if i % 5 != 4 else f"why {i}",
            lints=[lint(i % 4), lint(i % 4)],
            sources=[source(i % 6)],
        )
        out.append(snippet)
    out.append(Snippet("s-0", "serve", ["m"], {}, "m", None, sources=[source(9), source(9)]))  # both new: both kept
    out.append(
        Snippet("s-2", "serve", ["m"], {}, "m", None, placeholders=["<A>", "<A>"], sources=[source(1), source(1)])
    )  # never merged: kept as it is
    return out


def test_merge_gives_the_records_the_list_scans_gave():
    assert [s.to_dict() for s in merge(sample())] == [s.to_dict() for s in old_merge(sample())]


def test_merge_compares_each_source_a_constant_number_of_times(monkeypatch):
    """The quadratic merge, caught directly: `Source.__eq__` (and `Lint.__eq__`) calls per merged copy."""
    calls = {"n": 0}

    def counting(original):
        def eq(self, other):
            calls["n"] += 1
            return original(self, other)

        return eq

    monkeypatch.setattr(Source, "__eq__", counting(Source.__eq__))
    monkeypatch.setattr(Lint, "__eq__", counting(Lint.__eq__))

    def comparisons(n: int) -> int:
        snippets = [
            Snippet(
                "s-1",
                "serve",
                ["m"],
                {},
                "m",
                None,
                lints=[Lint("no-model", "m", line, "p.md", "markdown", "")],
                sources=[Source("markdown", "", "p.md", line, None, None, "vllm serve")],
            )
            for line in range(n)
        ]
        calls["n"] = 0
        [merged] = merge(snippets)
        assert len(merged.sources) == len(merged.lints) == n
        return calls["n"]

    assert comparisons(2000) <= 2 * comparisons(1000) + 10
