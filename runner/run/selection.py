"""What a run does: its options, and the (snippet, variant) pairs they select — the same selection
for `driftmatrix run` (runner/run/loop.py) and for `driftmatrix plan` (runner/run/planning.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.argv.edit import FIX
from driftmatrix.runner.run import shards
from driftmatrix.runner.settings import DECLARED_DEVICE, START_TIMEOUT_S, cache_dir


@dataclass
class RunOptions:
    snippets: Path
    output: Path
    targets: Path | None = None
    tier: str = "probe"
    only: list[str] | None = None
    shard: str | None = None
    variants: list[str] | None = None
    """Extra runs per snippet: `no-spec` (speculative config removed), `self-spec` (own draft)."""
    gpus: int | None = None
    gpu_mem: float | None = None
    start_timeout: float = START_TIMEOUT_S
    cache_dir: Path = field(default_factory=cache_dir)
    workdir: Path | None = None
    fmt: str = "rich"
    junit: Path | None = None
    target_names: list[str] | None = None
    stand_ins: str | None = None
    """`tiny` or `full` twins for models that cannot be had; None: such snippets SKIP."""
    share_gpu: int = 1
    """Servers per GPU at once (RunContext.share_gpu)."""
    declared_device: dict | None = field(default_factory=lambda: dict(DECLARED_DEVICE))
    """RunContext.declared_device: the CUDA device a CUDA build's config tier declares without a GPU."""
    jobs: int | None = None
    """Jobs at once (None: one per GPU, or side by side on a CPU where memory allows; settings.py)."""
    summary: str | None = None
    """Append a Markdown summary here (None: `$GITHUB_STEP_SUMMARY` when set)."""
    pick: dict[tuple[str, str | None], str] | None = None
    """A plan leg's jobs: (snippet id, variant) -> its tier (`--pick`); None: all that are selected."""
    stop_after: float | None = None
    """Seconds after which no job starts (a leg's deadline before the CI job's limit); the jobs in
    flight finish, the rest are left for the next run."""
    for_pages: bool = False
    """Also run each page's commands on the release it is written for where no target covers it
    (runner/run/page_builds.py), installed on first use."""
    previous: list[Path] = field(default_factory=list)
    """Outcome files of earlier runs (`--previous`): their finished jobs are not run again, and none of
    their records is written to `output` (store.Store)."""
    started_at: float | None = None
    """When the CI job started (Unix seconds, `--started-at`): `stop_after` counts from then, not
    from this run's start (runner/run/deadline.py)."""

    def asked_tier(self, snippet_id: str, variant: str | None) -> str:
        """The tier asked of a (snippet, variant)'s jobs: its plan leg's pick, else `tier` (each target
        may cap it: runner/argv/tier.py)."""
        return (self.pick or {}).get((snippet_id, variant), self.tier)


def select(catalog: Catalog, opts: RunOptions) -> list[tuple]:
    snippets = catalog.snippets
    if opts.only:
        wanted = set(opts.only)
        unknown = wanted - {s.id for s in snippets}
        if unknown:
            raise SystemExit(f"driftmatrix run: unknown snippet id(s): {', '.join(sorted(unknown))}")
        snippets = [s for s in snippets if s.id in wanted]
    pairs = [(s, FIX if s.fix else None) for s in snippets]
    for variant in opts.variants or ():  # variants change a server's speed: not for another subcommand's parser
        pairs += [
            (s, variant)
            for s in snippets
            if not s.fix and s.kind != "subcommand" and (s.speculative_config or variant == "self-spec")
        ]
    if opts.pick is not None:
        pairs = [(s, v) for s, v in pairs if (s.id, v) in opts.pick]
    if opts.shard:
        index, count = shards.parse_shard(opts.shard)
        pairs = shards.shard(pairs, index, count, lambda p: shards.predicted_cost(p[0], opts.tier))
    return pairs
