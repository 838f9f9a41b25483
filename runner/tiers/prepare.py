"""Before any tier: what the job will run. SKIPs what cannot run as written, resolves the models
(the model map, the hub, or a stand-in twin), takes files the docs name relative to a vLLM
checkout from the target's sdist, and substitutes all of it into the argv."""

from __future__ import annotations

from pathlib import Path

from runner import source_trees, standins
from runner.argv_edit import VARIANTS, variant_argv
from runner.models import has_weights, needed_models, substitute
from runner.tiers.state import JobState, Verdict, skip


def prepare(state: JobState) -> Verdict | None:
    job, ctx, out = state.job, state.ctx, state.outcome
    snippet = job.snippet
    argv = variant_argv(snippet, job.variant)
    _notes(state)
    # A placeholder still lets the parse tier check the flags; fragments, unbalanced quotes,
    # --config FILE and --help do not run at all.
    if not snippet.runnable and not (snippet.reason or "").startswith("placeholder"):
        out.argv = argv
        return skip(f"not runnable as written: {snippet.reason}")
    models = needed_models(snippet) if not state.placeholders else []
    if job.variant in VARIANTS:
        models = models[:1]
    subs, missing = ctx.resolver.resolve(models)
    configs_only = {m: subs.pop(m) for m in models if ctx.stand_ins and m in subs and not has_weights(subs[m])}
    missing += [m for m in models if m in configs_only]
    if missing and ctx.stand_ins:
        state.report("stand-in")
        missing = _stand_ins(state, models, subs, missing, configs_only)
    subs.update(_source_files(state, argv))
    state.argv = substitute(argv, subs)
    state.missing = missing
    out.argv, out.substitutions = state.argv, subs
    out.stand_in = any(ctx.resolver.is_stand_in(p) for p in subs.values())
    return None


def _notes(state: JobState) -> None:
    snippet, ev = state.job.snippet, state.outcome.evidence
    if snippet.kind == "python":
        ev.notes.append("python snippet: LLM(...) keyword arguments run as the equivalent `vllm serve` flags")
    if snippet.kind == "docker" and state.job.target.target.kind != "docker":
        ev.notes.append(f"docker snippet: image {snippet.image} not used; its server arguments ran "
                        f"against {state.job.target.target.name}")


def _source_files(state: JobState, argv: list[str]) -> dict[str, str]:
    """`--chat-template examples/...jinja`: the file from the target version's sdist."""
    target = state.job.target
    if not source_trees.names_source_files(argv) or target.target.docker:
        return {}
    files = source_trees.files_named(argv, source_trees.source_tree(target.version, state.ctx.cache_dir))
    if files:
        state.outcome.evidence.notes.append(f"{', '.join(files)}: taken from the vllm {target.version} sdist (the "
                                            "docs assume a vLLM checkout)")
    return files


def _stand_ins(state: JobState, models: list[str], subs: dict, missing: list[str],
               configs: dict[str, str]) -> list[str]:
    """Twins for the missing models (the served one first; a draft shares its tokenizer); returns
    the models still missing. `configs`: model-map entries holding a config.json but no weights."""
    still = []
    for i, model in enumerate(models):
        if model not in missing:
            continue
        served = subs.get(models[0]) or (models[0] if Path(models[0]).is_dir() else None)
        try:
            twin = standins.ensure(model, state.job.target, state.ctx.cache_dir, layers=2 if i == 0 else 1,
                                   tokenizer_from=served if i > 0 else None, config_from=configs.get(model),
                                   full_size=state.ctx.stand_ins == "full")
        except standins.StandInError as err:
            still.append(model)
            state.why_not.append(str(err))
            continue
        subs[model] = twin.dir
        state.outcome.evidence.notes.append(f"{model}: {_describe(twin)}")
    return still


def _describe(twin) -> str:
    pattern = f" {'/'.join(t.split('_')[0] for t in twin.layer_types)}" if twin.layer_types else ""
    pattern = "" if twin.full_size else pattern  # a full-size pattern is the source's, dozens long
    extra = "".join(f"; {n}" for n in twin.notes or [])
    size = "full-size " if twin.full_size else ""
    return (f"stand-in {size}{twin.family} twin ({twin.config_source}; transformers {twin.transformers}; "
            f"{twin.layers} layer(s){pattern}; random weights{extra})")
