"""Before any tier: what the job will run. SKIPs what cannot run as written, resolves the models
(the model map, the hub, or a twin), takes files the docs name relative to a vLLM
checkout from the target's sdist, puts replacements in the places of a placeholder model, draft or
path (runner/models/placeholders.py), and substitutes all of it into the argv.

From the hub come configuration and tokenizer files, and weights only for a job that starts a
server and only within the weights budget (settings.weights_budget_bytes); a model the hub says
cannot be loaded as written (runner/models/hub_answer.py) FAILs the job after its parser. A model
whose weights stay on the hub runs on a twin built from its published config with `--stand-ins`;
without, the tiers that need no weights still run, and the job SKIPs at start.

A `subcommand` snippet (`vllm bench throughput …`) is checked by its own parser only: no model is
resolved, fetched or stood in for (runner/outcomes/subcommands.py)."""

from __future__ import annotations

from dataclasses import replace

from driftmatrix.common.option_tokens import canonical
from driftmatrix.runner.argv.edit import VARIANTS, variant_argv, without_options
from driftmatrix.runner.argv.shape import twin_shape
from driftmatrix.runner.builds import source_trees
from driftmatrix.runner.isolation import env_policy
from driftmatrix.runner.jobs.tiers.state import JobState, Verdict, skip
from driftmatrix.runner.models import draft_kinds, hub_answer, missing_files, placeholders, twins
from driftmatrix.runner.models.resolution import Resolution, has_weights, needed_models, substitute
from driftmatrix.runner.outcomes import subcommands
from driftmatrix.runner.outcomes.evidence_record import TwinNote
from driftmatrix.runner.serve import ranks
from driftmatrix.runner.settings import weights_budget_bytes


def prepare(state: JobState) -> Verdict | None:
    job, ctx, out = state.job, state.ctx, state.outcome
    snippet = job.snippet
    argv = variant_argv(snippet, job.variant)
    _notes(state)
    _env_policy(state)
    # A placeholder still lets the parse tier check the flags; fragments, unbalanced quotes,
    # --config FILE and --help do not run at all.
    if not snippet.runnable and not (snippet.reason or "").startswith("placeholder"):
        out.argv = argv
        return skip(f"not runnable as written: {snippet.reason}")
    if snippet.kind == "subcommand":  # its parser needs no model, no file: nothing to resolve
        out.argv = state.argv = argv
        if subcommands.words(snippet) is None:
            return skip("not runnable as written: a subcommand snippet without its subcommand words")
        return None
    argv = _as_parsed(state, argv)
    stood = _placeholders(state)
    models = (
        [m for m in needed_models(snippet) if not any(s.placeholder in m for s in stood)]
        if not state.placeholders
        else []
    )
    if job.variant in VARIANTS:
        models = models[:1]
    if models:
        state.report("models")  # a first fetch from the hub may take a while
    res = ctx.resolver.resolve(models, ctx.cache_dir, _weights_budget(state, argv))
    _unloadable(state, argv, res)
    subs, missing = res.subs, res.missing
    out.evidence.notes.extend(f"{m}: {note}" for m, note in res.from_hub.items())
    # a twin replaces a config-only folder: from the model map always, from the hub when its weights
    # were wanted (a server starts) and not fetched; below the start tier the real config serves
    configs_only = {
        m: subs.pop(m)
        for m in models
        if ctx.stand_ins and m in subs and (m in res.no_weights if m in res.from_hub else not has_weights(subs[m]))
    }
    missing += [m for m in models if m in configs_only]
    if missing and ctx.stand_ins:
        state.report("stand-in")
        missing = _build_twins(state, models, subs, missing, configs_only, res.no_weights)
    subs.update(_source_files(state, argv))
    _missing_files(state, argv, subs)
    stood = _placeholder_twin(state, stood, argv)
    state.argv = placeholders.apply(substitute(argv, subs), stood)
    if state.weightless:  # vLLM initialises the weights itself: the command's own load format cannot apply
        state.argv = [*without_options(state.argv, "--load-format".__eq__), *twins.WEIGHTLESS]
        state.outcome.evidence.notes.append(
            f"{' '.join(twins.WEIGHTLESS)} added: the twin has no weights "
            "(an architecture only vLLM describes); weight loading is not checked"
        )
    state.missing = missing
    out.argv, out.substitutions = state.argv, subs
    out.stand_in = any(ctx.resolver.is_twin(p) for p in subs.values()) or any(s.twin for s in stood)
    _hub_limits(state, res)
    return None


def _as_parsed(state: JobState, argv: list[str]) -> list[str]:
    """`argv` with each option spelled as the target's own parser takes it (common/option_tokens.py:
    `--trust-remote` is `--trust-remote-code`, `--tensor_parallel 2` is `--tensor-parallel-size 2`), so that
    every decision after this one — the code it loads, its ranks, its twin's shape, where its server
    listens — reads what vLLM reads, however the docs spelled it."""
    helper = state.ctx.helper(state.job.target)
    helper.start()
    if helper.options is None:  # a helper of an older driftmatrix: spellings read without the release's options
        return argv
    state.options = helper.options
    spelled = canonical(argv, helper.options, helper.allow_abbrev)
    rewritten = [f"{a.split('=', 1)[0]} as {b.split('=', 1)[0]}" for a, b in zip(argv, spelled) if a != b]
    if rewritten:
        state.outcome.evidence.notes.append(f"read as this release's parser reads it: {', '.join(rewritten)}")
    return spelled


def _placeholders(state: JobState) -> list[placeholders.StoodIn]:
    """Replacements for the placeholder model, draft and paths (runner/models/placeholders.py), in the state; where
    one stands in, the tiers it cannot decide SKIP: start always (a server runs the reader's model or
    nothing), config for a draft (its type decides the speculative config)."""
    stood = state.stood_in = placeholders.plan(state.job.snippet)
    if not stood:
        return stood
    words = ", ".join(s.placeholder for s in stood)
    state.skip_at["start"] = (
        f"placeholder {words} must be filled in: a server starts only on the reader's own "
        "model and files (the tiers before ran with a stand-in)"
    )
    draft = next((s for s in stood if s.role == "draft model"), None)
    model = next((s for s in stood if s.role == "model"), None)
    if draft:
        state.skip_at.setdefault(
            "config",
            f"placeholder {draft.placeholder} must be filled in: the draft model's "
            "type decides the speculative config, and a stand-in is not of it",
        )
    elif model and isinstance((state.job.snippet.speculative_config or {}).get("model"), str):  # judged against it
        state.skip_at.setdefault(
            "config",
            f"placeholder {model.placeholder} must be filled in: the draft model is "
            "checked against the served model, and a stand-in is not it",
        )
    return stood


def _placeholder_twin(state: JobState, stood: list, argv: list[str]) -> list:
    """The placeholder model's replacement for the config tier: a twin of placeholders.TWIN_OF (with
    `--stand-ins`), else the parser's name and the config tier SKIPs. Notes say what replaced what."""
    model = next((s for s in stood if s.role == "model"), None)
    if model and state.wants("config") and not state.placeholders and "config" not in state.skip_at:
        if not state.ctx.stand_ins:
            state.skip_at["config"] = (
                f"placeholder {model.placeholder} must be filled in: the config tier needs a "
                "model config (`run --stand-ins` checks it on a stand-in)"
            )
        else:
            try:
                twin = twins.ensure(
                    placeholders.TWIN_OF,
                    state.job.target,
                    state.ctx.cache_dir,
                    split=twin_shape(argv),
                    leases=state.leases,
                )
                stood = [replace(s, value=twin.dir, twin=True) if s is model else s for s in stood]
            except twins.TwinError as err:
                state.skip_at["config"] = f"placeholder {model.placeholder} must be filled in (no stand-in: {err})"
    state.stood_in = stood
    state.outcome.evidence.placeholders = [s.record() for s in stood]
    state.outcome.evidence.notes.extend(placeholders.note(s) for s in stood)
    return stood


def _weights_budget(state: JobState, argv: list[str]) -> int | None:
    """Bytes of weights the hub may give this job: None when it starts no server (the parse and
    config tiers need configuration and tokenizer only) or asks for more devices than the run has
    (the start tier SKIPs it before anything loads)."""
    if not state.wants("start") or ranks.refusal_on(argv, state.ctx.gpus, state.job.target):
        return None
    return weights_budget_bytes(state.ctx.gpus)


def _unloadable(state: JobState, argv: list[str], res: Resolution) -> None:
    """The hub's answers that a model cannot be loaded as written: the job FAILs after its parser
    (parse_config), and nothing stands in. Unless the command reads that model other than from the
    top level of the hub's `main` (`--revision`, `--hf-config-path`): then the answer decides nothing,
    and the model counts as one the hub could not give (a SKIP, a twin)."""
    for model, found in res.unloadable.items():
        elsewhere = hub_answer.read_elsewhere(argv, served=model == state.job.snippet.model)
        if elsewhere is None:
            state.unloadable.append(found)
            continue
        res.missing.append(model)
        res.unavailable[model] = (
            f"{found.why}, but the command reads it with {elsewhere}, which the hub's main listing does not decide"
        )


def _hub_limits(state: JobState, res: Resolution) -> None:
    """What the hub could not give: a model it refused (config SKIPs with the hub's reason) or weights
    left there without a twin in their place (start SKIPs). The tiers before still run for real."""
    refused = [m for m in state.missing if m in res.unavailable]
    if refused:
        no_twin = f"; no stand-in: {'; '.join(state.why_not)}" if state.why_not else ""
        why = "; ".join(f"{m}: {res.unavailable[m]}" for m in refused)
        state.skip_at["config"] = f"model not available here ({why}{no_twin})"
    bare = [
        m
        for m, folder in state.outcome.substitutions.items()
        if m in res.no_weights and not state.ctx.resolver.is_twin(folder)
    ]
    if bare and not state.missing:
        no_twin = (
            f"; no stand-in: {'; '.join(state.why_not)}"
            if state.why_not
            else "; `run --stand-ins` starts a twin built from its published config; DRIFTMATRIX_WEIGHTS_BUDGET_GB "
            "sets the budget"
        )
        why = "; ".join(f"{m}: {res.no_weights[m]}" for m in bare)
        state.skip_at["start"] = f"model weights not here ({why}{no_twin})"


def _env_policy(state: JobState) -> None:
    """Documented env assignments vLLM will not get (untrusted input), said in the outcome; without
    some of them the command means something else: its config tier and beyond SKIP."""
    why = env_policy.dropped_why(state.job.snippet.env)
    dropped = state.outcome.evidence.env_dropped = sorted(why)
    if dropped:
        state.outcome.evidence.notes.append(
            "not passed to vLLM (untrusted environment): " + "; ".join(f"{name}: {why[name]}" for name in dropped)
        )
    needed = env_policy.meaningless_without(dropped)
    if needed:
        state.skip_at["config"] = (
            f"needs {', '.join(needed)} from the docs author's machine, which driftmatrix does "
            "not pass to vLLM (untrusted environment): only the options were checked"
        )


def _notes(state: JobState) -> None:
    snippet, ev = state.job.snippet, state.outcome.evidence
    if snippet.kind == "python":
        ev.notes.append("python snippet: LLM(...) keyword arguments run as the equivalent `vllm serve` flags")
    if snippet.kind == "subcommand" and subcommands.words(snippet):
        ev.notes.append(
            f"subcommand snippet: checked with `{subcommands.program(snippet)}`'s own argument parser "
            "(and its validation) only; no model was loaded"
        )
    if snippet.wrapper:  # untrusted programs (`nsys profile`, `numactl`): the reader's, never ours to run
        ev.notes.append(f"run without the program the docs put in front of it: `{' '.join(snippet.wrapper)}`")
    if snippet.kind == "docker" and state.job.target.target.kind != "docker":
        ev.notes.append(
            f"docker snippet: image {snippet.image} not used; its server arguments ran "
            f"against {state.job.target.target.name}"
        )


def _source_files(state: JobState, argv: list[str]) -> dict[str, str]:
    """`--chat-template examples/...jinja`: the file from the target version's sdist."""
    target = state.job.target
    if not source_trees.names_source_files(argv) or target.target.docker:
        return {}
    tree, why = source_trees.release_source(target.version, state.ctx.cache_dir)
    if tree is None:
        why = why or "no release sdist for this build"
        state.outcome.evidence.notes.append(
            f"the vllm {target.version} sdist (for the files the command names) could not be had: {why}"
        )
    files = source_trees.files_named(argv, tree)
    if files:
        state.outcome.evidence.notes.append(
            f"{', '.join(files)}: taken from the vllm {target.version} sdist (the docs assume a vLLM checkout)"
        )
    return files


def _missing_files(state: JobState, argv: list[str], subs: dict[str, str]) -> None:
    """A file the command names that is not here hides nothing else: stood in (subs), the server not
    started on it (runner/models/missing_files.py)."""
    for gone in missing_files.missing(argv, subs):
        subs[gone.value] = missing_files.stand_in(state.ctx.cache_dir)
        state.skip_at.setdefault("start", gone.skip_reason())
        state.outcome.evidence.notes.append(gone.note())


def _build_twins(
    state: JobState,
    models: list[str],
    subs: dict,
    missing: list[str],
    configs: dict[str, str],
    no_weights: dict[str, str],
) -> list[str]:
    """Twins for the missing models (the served one first; a draft shares its tokenizer); returns
    the models still missing. `configs`: model-map entries or hub folders holding a config.json but
    no weights; `no_weights`: why a hub folder has none."""
    still = []
    target = state.job.target
    # offline, vLLM's own supported-models table (in the target version's docs) names the architecture
    docs_root = source_trees.source_tree(target.version, state.ctx.cache_dir) if not target.target.docker else None
    for i, model in enumerate(models):
        if model not in missing:
            continue
        served = subs.get(models[0])  # never a folder the docs name: only what we resolved or built
        try:
            twin = twins.ensure(
                model,
                target,
                state.ctx.cache_dir,
                layers=2 if i == 0 else 1,
                tokenizer_from=served if i > 0 else None,
                config_from=configs.get(model),
                full_size=state.ctx.stand_ins == "full",
                docs_root=docs_root,
                split=twin_shape(variant_argv(state.job.snippet, state.job.variant)),
                leases=state.leases,
                draft=draft_kinds.of(state.job.snippet.speculative_config, models[0]) if i else None,
            )
        except twins.TwinError as err:
            state.why_not.append(str(err))
            if model in no_weights:  # the hub's config still serves the tiers before start
                subs[model] = configs[model]
            else:
                still.append(model)
            continue
        if twin.weightless and i > 0:  # a draft's weights are loaded by the speculative config: none to load
            state.why_not.append(f"{model}: its twin has no weights (an architecture only vLLM describes)")
            still.append(model)
            continue
        state.weightless = state.weightless or twin.weightless
        subs[model] = twin.dir
        hub = f" (config from the hub; {no_weights[model]})" if model in no_weights else ""
        state.outcome.evidence.notes.append(f"{model}: {_describe(twin)}{hub}")
        state.outcome.evidence.twins.append(
            TwinNote(
                model,
                twin.family,
                i == 0,
                twin.published_architecture,
                twin.config_source,
                transformers=twin.transformers,
            )
        )
    return still


def _describe(twin) -> str:
    pattern = f" {'/'.join(t.split('_')[0] for t in twin.layer_types)}" if twin.layer_types else ""
    pattern = "" if twin.full_size else pattern  # a full-size pattern is the source's, dozens long
    extra = "".join(f"; {n}" for n in twin.notes or [])
    size = "full-size " if twin.full_size else ""
    return (
        f"stand-in {size}{twin.family} twin ({twin.config_source}; transformers {twin.transformers}; "
        f"{twin.layers} layer(s){pattern}; random weights{extra})"
    )
