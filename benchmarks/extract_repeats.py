"""Repeated commands: extraction must be linear in what a page repeats (issue 44, point 4).

A docs page is untrusted; the security review found extraction quadratic in repeated commands (the
merge compared every source with every other: 2,500 copies of a command 5 s, 5,000 25 s, 10,000 84 s,
a 5 MiB page about 1.4 h). Reports, best of N runs (wall clock, and the process's CPU time: on a shared
machine the wall clock counts others' work too), each page extracted in process
through `driftmatrix.extractor.catalog.extract` (what `driftmatrix extract` runs; without the release-files check,
which needs the releases' sdists) and its snippets.json written:
  blocks   - `vllm serve org/m --max-model-len 256` in a fenced ```bash block of its own, 2,500 / 5,000 /
             10,000 times
  one      - the same command 2,500 / 5,000 / 10,000 times in one ```bash block
  page     - a 5 MiB page, the page limit (extractor/bounds.py MAX_PAGE_BYTES): `## H`, a line of text and
             the command's block, again and again (every heading's id is `h_N`)
  mixed    - as big a page of the other shapes a page may repeat (`--mixed`), a fifth each: an install line
             and a command; one block of commands with a lint and a `${PORT:-8000}` each; one YAML block
             of folded scalars; one Python block of command strings and engine calls; one long command
             with `vllm x` again and again in it
and the ratio between sizes: linear is about x2 per doubling (quadratic: x4).

    python benchmarks/extract_repeats.py [--runs N] [--sizes 2500 5000 10000] [--page-mib 5] [--mixed] [--old DIR]

`--old DIR` measures other code: `DIR/extractor/` (a package), e.g. `git archive HEAD~1 extractor | tar
-x -C DIR`. The old code needs smaller pages (`--page-mib 0.25`, or `--page-mib 0` to skip it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import best

CMD = "vllm serve org/m --max-model-len 256"
MIB = 1024 * 1024
MIXED = (  # (what opens a section, what it repeats, what closes it): each section a fifth of the page
    ("", f"pip install vllm==0.20.1\n\n```bash\n{CMD}\n```\n\n", ""),  # an install line per command
    ("```bash\nPORT=1\n", f"{CMD} --port ${{PORT:-8000}} \\  \n  --x 1\n", "```\n\n"),  # one block: lints, defaults
    ("```yaml\n", f"- >\n  {CMD}\n  --port 1\n", "```\n\n"),  # folded YAML scalars
    ("```python\n", f"m = 'a/b'\nx = '{CMD}'\nLLM(model=m, speculative_config={{'method': 'ngram'}})\n", "```\n\n"),
    (f"```bash\n{CMD}\nfoo \\\n", "  vllm x \\\n", "  --port 1\n```\n\n"),  # one long command, `vllm x` again and again
)


def blocks(n: int) -> str:
    return "# Repeats\n\n" + f"```bash\n{CMD}\n```\n\n" * n


def one_block(n: int) -> str:
    return "# Repeats\n\n```bash\n" + f"{CMD}\n" * n + "```\n"


def fill(unit: str, size: int) -> str:
    """A page of `unit` again and again, as many as fit in `size` bytes."""
    head = "# Repeats\n\n"
    return head + unit * ((size - len(head.encode())) // len(unit.encode()))


def mixed(size: int) -> str:
    """A page of the MIXED sections, as big as fits in `size` bytes."""
    head, sections = "# Repeats\n\n", []
    for opening, unit, closing in MIXED:
        room = size // len(MIXED) - len(opening.encode()) - len(closing.encode())
        sections.append(opening + unit * (room // len(unit.encode())) + closing)
    return head + "".join(sections)


def catalog_module(old: Path | None) -> tuple[ModuleType, int]:
    """(driftmatrix.extractor.catalog, MAX_PAGE_BYTES): the repository's, or `old`'s."""
    if old is not None:
        sys.path.insert(0, str(old))  # `old`'s extractor first on the path
    from driftmatrix.extractor import bounds, catalog

    return catalog, bounds.MAX_PAGE_BYTES


def measure(
    catalog: ModuleType, folder: Path, name: str, text: str, runs: int, stable: str
) -> tuple[float, float, int, int]:
    """(seconds, CPU seconds, snippets, sources) of extracting `text` as a Markdown page and writing
    snippets.json, each the best of `runs`. The CPU seconds are the process's own: on a machine others
    share, the wall clock also counts their work."""
    page = folder / f"{name}.md"
    page.write_text(text)
    cpu: list[float] = []

    def extract() -> None:
        start = time.process_time()
        found, _ = catalog.extract([page], workers=1, stable=stable)
        found.write(folder / f"{name}.json")
        cpu.append(time.process_time() - start)

    seconds = best(extract, runs)
    found, _ = catalog.extract([page], workers=1, stable=stable)
    return seconds, min(cpu), len(found.snippets), sum(len(s.sources) for s in found.snippets)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2500, 5000, 10000])
    parser.add_argument(
        "--page-mib", type=float, default=5.0, help="the big pages' size (capped at the page limit; 0: none)"
    )
    parser.add_argument("--mixed", action="store_true", help="also a page of the other repeated shapes, as big")
    parser.add_argument("--old", type=Path, help="measure the code in this folder instead")
    args = parser.parse_args()
    catalog, limit = catalog_module(args.old)
    from driftmatrix.runner.builds.resolve import stable_pin

    stable = stable_pin()
    print(f"code: {args.old or 'this repository'}; best of {args.runs}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for label, page in (("blocks", blocks), ("one", one_block)):
            previous = None
            cells = []
            for n in args.sizes:
                seconds, cpu, snippets, sources = measure(catalog, folder, f"{label}-{n}", page(n), args.runs, stable)
                assert (snippets, sources) == (1, n), (label, n, snippets, sources)
                wall, own = (f" x{seconds / previous[0]:.2f}", f" x{cpu / previous[1]:.2f}") if previous else ("", "")
                cells.append(f"{n:,}: {seconds:.2f} s{wall} (cpu {cpu:.2f} s{own})")
                previous = seconds, cpu
            print(f"{label:<8} {'  '.join(cells)}")
        size = min(int(args.page_mib * MIB), limit)
        pages = [("page", fill(f"## H\n\nSome text.\n\n```bash\n{CMD}\n```\n\n", size))] if size > 0 else []
        pages += [("mixed", mixed(size))] if size > 0 and args.mixed else []
        for label, text in pages:
            seconds, cpu, snippets, sources = measure(catalog, folder, label, text, args.runs, stable)
            print(
                f"{label:<8} {len(text.encode()) / MIB:.2f} MiB, {sources:,} commands ({snippets} distinct): "
                f"{seconds:.2f} s (cpu {cpu:.2f} s, {cpu / sources * 1e6:.0f} us per command)"
            )
    print("linear: about x2 per doubling (quadratic: x4)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
