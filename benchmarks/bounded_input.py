"""Bounded input: what hostile docs and logs cost (issue 30, item 9).

Reports, best of N runs (wall clock):
  bomb     - extracting a recipes tree holding a YAML alias bomb recipe (297 bytes: nine x's, then 7
             levels of nine aliases of the level before, `model: {model_id: *top}`) and one good
             recipe, in process, snippets.json written
  logscan  - reading a server log as a failed start does (tracebacks, root cause, signature, warnings,
             engine config, excerpt) whose Traceback header is followed by a 4 MB line of `aError`…`!`
             (the exception-line regex was quadratic in it: 40 kB took 6 s) and a 4 MB exception message
Target: each under 2 s.

    python benchmarks/bounded_input.py [--runs N] [--levels N] [--line-bytes N] [--old DIR]

`--old DIR` measures other code: `DIR/extractor/` (a package), `DIR/runner/logscan.py` and
`DIR/runner/classify.py` (with `DIR/runner/data/signatures.yaml`), e.g. copies made with `git show
HEAD:PATH`. The old code needs smaller inputs (`--levels 7 --line-bytes 20000`): its time grows x9 per
alias level and with the square of the line (8 levels: 39 s, a 1.4 GB snippets.json, 3.6 GB of memory).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import best

from driftmatrix.runner.builds.resolve import stable_pin


def bomb_tree(root: Path, levels: int) -> Path:
    """A recipes checkout (models/<org>/<repo>.yaml + taxonomy.yaml) with the bomb and a good recipe."""
    names = "abcdefghijklmnop"[:levels]
    bomb = f"{names[0]}: &{names[0]} [x,x,x,x,x,x,x,x,x]\n"
    for prev, name in zip(names, names[1:]):
        bomb += f"{name}: &{'top' if name == names[-1] else name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    (root / "models" / "org").mkdir(parents=True)
    (root / "taxonomy.yaml").write_text("features: {}\n")
    (root / "models" / "org" / "bomb.yaml").write_text(bomb + "model: {model_id: *top}\n")
    (root / "models" / "org" / "good.yaml").write_text("model:\n  model_id: org/good\n")
    return root


def log_lines(line_bytes: int) -> list[str]:
    return [
        "INFO 01-02 03:04:05 [core.py:1] Initializing a V1 LLM engine (v0.1) with config: dtype=bf16",
        "(EngineCore pid=7) ERROR 01-02 03:04:05 [core.py:9] EngineCore failed to start.",
        "(EngineCore pid=7) Traceback (most recent call last):",
        '(EngineCore pid=7)   File "/site/vllm/engine/arg_utils.py", line 7, in create',
        "(EngineCore pid=7)     raise ValueError(text)",
        "(EngineCore pid=7) " + ("aError" * (line_bytes // 6 + 1))[:line_bytes] + "!",
        "(EngineCore pid=7) ValueError: " + "x" * line_bytes,
    ]


def modules(old: Path | None) -> tuple[ModuleType, ModuleType, ModuleType]:
    """(driftmatrix.extractor.catalog, driftmatrix.runner.diagnosis.logscan, driftmatrix.runner.diagnosis.classify): the repository's, or `old`'s."""
    if old is None:
        from driftmatrix.extractor import catalog
        from driftmatrix.runner.diagnosis import classify, logscan

        return catalog, logscan, classify
    sys.path.insert(0, str(old))
    from driftmatrix import runner
    from driftmatrix.extractor import catalog  # from `old`: first on the path

    loaded = []
    for name in ("logscan", "classify"):  # old classify imports old logscan
        spec = importlib.util.spec_from_file_location(f"runner.{name}", old / "runner" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"runner.{name}"] = module
        setattr(runner, name, module)
        spec.loader.exec_module(module)
        loaded.append(module)
    return catalog, *loaded


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--levels", type=int, default=8, help="alias levels of the bomb (8: ~300 bytes)")
    parser.add_argument("--line-bytes", type=int, default=4_000_000)
    parser.add_argument("--old", type=Path, help="measure the code in this folder instead")
    args = parser.parse_args()
    catalog, logscan, classify = modules(args.old)
    with tempfile.TemporaryDirectory() as tmp:
        tree = bomb_tree(Path(tmp) / "recipes", args.levels)
        out = Path(tmp) / "snippets.json"

        def extract() -> None:
            found, _ = catalog.extract([tree], workers=1, stable=stable_pin())
            found.write(out)

        t_bomb = best(extract, args.runs)
        found, _ = catalog.extract([tree], workers=1, stable=stable_pin())
        codes = sorted({d.code for d in found.diagnostics})
        size = out.stat().st_size
    lines = log_lines(args.line_bytes)

    def scan() -> None:
        tbs = logscan.tracebacks(lines)
        root = classify.root_cause(tbs)
        classify.match_signature(f"{root.type}: {root.message}", logscan.excerpt(lines, root.end))
        classify.warning_records(logscan.warnings(lines))
        logscan.engine_config(lines), logscan.memory_facts(lines)

    t_scan = best(scan, args.runs)
    root = classify.root_cause(logscan.tracebacks(lines))
    print(f"code: {args.old or 'this repository'}")
    print(
        f"bomb     ({args.levels} levels, {len(found.snippets)} snippets, diagnostics {codes}, "
        f"snippets.json {size / 1e6:.2f} MB): {t_bomb:.3f} s"
    )
    print(
        f"logscan  ({args.line_bytes / 1e6:g} MB line after a Traceback header; root cause {root.type}, "
        f"message {len(root.message)} chars): {t_scan:.3f} s"
    )
    print(f"target: each under 2 s: {'met' if max(t_bomb, t_scan) < 2 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
