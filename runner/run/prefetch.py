"""`driftmatrix run --fetch-only`: fetch from the hub what the jobs will need, and run nothing.

The workflow runs this as its own step — the only one that holds the HF token — before the step
that runs the jobs: no code from the docs or a model repository runs in a process that has the
token (a process can read the environment of another of the same user in /proc). The run step
then finds every model in the hub folder (runner/models/hub.py reuses a fetched folder as it is) and
needs no token; what could not be fetched SKIPs or gets a twin there, with the reason.
"""

from __future__ import annotations

from driftmatrix.extractor.snippet_record import Catalog
from driftmatrix.runner.argv.edit import VARIANTS
from driftmatrix.runner.argv.parallel import ranks_of
from driftmatrix.runner.argv.tier import deepest_tier
from driftmatrix.runner.builds.targets import gpu_count, load
from driftmatrix.runner.models.resolution import ModelResolver, needed_models
from driftmatrix.runner.outcomes.vocabulary import TIERS
from driftmatrix.runner.serve import ranks
from driftmatrix.runner.settings import weights_budget_bytes


def prefetch(opts, say=print) -> int:
    """Fetch configs (and weights within the budget, for jobs that start a server); 0 always: what
    cannot be fetched is the run step's to report, per job."""
    from driftmatrix.runner.builds.targets import default_path
    from driftmatrix.runner.run.selection import select

    tfile = load(opts.targets or default_path())
    resolver = ModelResolver(tfile.models)
    if not resolver.hub:
        say("the hub is not reachable: nothing fetched (the run uses the model map and stand-ins)")
        return 0
    gpus = gpu_count() if opts.gpus is None else opts.gpus
    targets = [t for t in tfile.targets if not opts.target_names or t.name in opts.target_names]
    asked: dict[tuple, str] = {}
    for snippet, variant in select(Catalog.read(opts.snippets), opts):
        if snippet.placeholders or not snippet.runnable or snippet.kind == "subcommand":
            continue  # a subcommand (`vllm bench …`) is checked by its parser only: no model needed
        models = needed_models(snippet)[: 1 if variant in VARIANTS else None]
        starts = _starts(snippet, variant, targets, opts)
        # without a GPU a multi-GPU command starts as CPU ranks on a CPU build (runner/serve/ranks.py)
        placed = ranks.refusal(ranks_of(snippet.argv), gpus, cpu_build=not gpus) is None
        budget = weights_budget_bytes(gpus) if starts and placed else None
        key = (tuple(models), budget)
        if models and key not in asked:
            res = resolver.resolve(models, opts.cache_dir, budget)
            asked[key] = "; ".join(
                [
                    *(f"{m}: {n}" for m, n in res.from_hub.items()),
                    *(f"{m}: {why}" for m, why in res.unavailable.items()),
                    *(f"{m}: cannot be loaded as written: {a.why}" for m, a in res.unloadable.items()),
                ]
            )
    for line in filter(None, asked.values()):
        say(line)
    say(f"{len(asked)} model set(s) asked of the hub")
    return 0


def _starts(snippet, variant, targets, opts) -> bool:
    """A job of this (snippet, variant) starts a server on one of the run's targets: its deepest tier
    there (as the run decides it, the target's cap included) is `start` or deeper."""
    asked = opts.asked_tier(snippet.id, variant)
    return any(TIERS.index(deepest_tier(snippet, t, asked)) >= TIERS.index("start") for t in targets)
