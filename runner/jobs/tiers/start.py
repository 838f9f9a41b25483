"""The start tier: a real `vllm serve` (or the image's, for a docker target) in its own process
group on a free loopback port, ready when /health answers 200 within the deadline. A command
that asks for more devices (or memory) than the run has is SKIPped before anything starts; on
vLLM's CPU build a multi-GPU command runs with its ranks as CPU worker processes (runner/serve/ranks.py). A
server that dies first is classified by the root cause of its traceback; our deadline, a taken
port or a death without a traceback is an ERROR, never the docs'."""

from __future__ import annotations

import os

from driftmatrix.extractor.shell_commands import option_value
from driftmatrix.runner.argv.edit import without_options
from driftmatrix.runner.argv.parallel import ranks_of
from driftmatrix.runner.diagnosis import classify, logscan
from driftmatrix.runner.isolation import env_policy, sandbox, unix_relay
from driftmatrix.runner.isolation.sandbox import detection
from driftmatrix.runner.jobs.tiers.state import (
    JobState,
    Verdict,
    crashed,
    error,
    fail,
    literal_env,
    read_log,
    sandbox_limit,
    skip,
)
from driftmatrix.runner.models.resolution import estimated_bytes
from driftmatrix.runner.outcomes.evidence_record import RaisedException, RankRun, ServerRun
from driftmatrix.runner.serve import compile_cache, docker_target, model_infos, ranks
from driftmatrix.runner.serve.server import Server, free_port, serve_args
from driftmatrix.runner.settings import SHARED_GPU_MEMORY, cpu_cores


def start(state: JobState) -> Verdict | None:
    docker = bool(state.job.target.target.docker)  # a container keeps the same promises (runner/serve/docker_target.py)
    refused = detection.required_missing()
    if refused and not docker:
        return error(refused, "start")
    if (unsafe := state.plain_refusal()) and not docker:
        return skip(unsafe, "start")
    if "start" in state.skip_at:  # e.g. weights left on the hub (over the budget) and no twin
        return skip(state.skip_at["start"], "start")
    too_big = _too_big(state)
    if too_big:
        return too_big
    _share_gpu(state)
    env = _server_env(state)
    state.api_key = option_value(state.argv, "--api-key") or env.get("VLLM_API_KEY")
    state.ctx.redact.add(state.api_key)
    for last in (False, True):
        verdict = _one_start(state, env, retry=not last)
        if verdict == "ready":
            return None
        if verdict != "port taken":
            return verdict
        # the relay may refuse the port before any server record exists (`_server`): no port to name then
        taken = state.outcome.evidence.server
        port = f"port {taken.port}" if taken else "the server's port"
        state.outcome.evidence.notes.append(f"{port} was taken; retried on another")
    raise AssertionError("unreachable: the second attempt decides")


def _too_big(state: JobState) -> Verdict | None:
    ctx, snippet, target = state.ctx, state.job.snippet, state.job.target
    why = ranks.refusal_on(state.argv, ctx.gpus, target)
    if why:
        return skip(why, "start")
    need = ranks_of(state.argv).world
    if ctx.gpu_mem_gb and snippet.model:
        size = estimated_bytes(snippet.model, state.outcome.substitutions.get(snippet.model))
        if size and size > ctx.gpu_mem_gb * 1e9 * need:
            return skip(f"model weights ~{size / 1e9:.0f} GB exceed --gpu-mem {ctx.gpu_mem_gb} GB x {need}", "start")
    return None


def _share_gpu(state: JobState) -> None:
    """`run --share-gpu N`: this server runs beside up to N-1 others on its GPU, so it gets its share
    of the memory instead of the documented (or vLLM's default) utilization; said in the outcome."""
    share = state.ctx.share_gpu
    if share <= 1 or len(state.gpu_ids) != 1:
        return
    flag = "--gpu-memory-utilization"
    documented = option_value(state.argv, flag)
    fraction = round(SHARED_GPU_MEMORY / share, 3)
    state.argv = [*without_options(state.argv, flag.__eq__), flag, str(fraction)]
    state.outcome.evidence.notes.append(
        f"run beside up to {share - 1} other server(s) on one GPU: {flag} {fraction} "
        f"(documented: {documented or 'not set, vLLM default'})"
    )


def _server_env(state: JobState) -> dict[str, str]:
    """An allow-list of ours (runner/isolation/env_policy.py), the targets file's settings and the docs' allowed
    assignments; offline always and without a token: the models are local folders fetched beforehand
    (runner/models/hub.py), so the server runs on exactly those files and never downloads on its own."""
    ctx, target = state.ctx, state.job.target
    env = {
        **env_policy.runner_env(),
        **env_policy.without_secrets({**ctx.base_env, **target.env}),
        **literal_env(state.job),
    }
    if state.gpu_ids:  # nvidia-smi's indexes are PCI bus order; CUDA's default order is fastest first
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, state.gpu_ids))
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    asked = ranks_of(state.argv)
    if "VLLM_CPU_OMP_THREADS_BIND" not in env:  # one the docs or the user set wins
        if ranks.on_cpu(asked, state.ctx.gpus):  # vLLM's own binding refuses more ranks than NUMA nodes
            env["VLLM_CPU_OMP_THREADS_BIND"] = ranks.cpu_binding(asked.world, state.cpu_ids or cpu_cores())
        elif state.cpu_ids:
            env["VLLM_CPU_OMP_THREADS_BIND"] = ",".join(map(str, state.cpu_ids))
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _rank_run(state: JobState, env: dict[str, str]) -> RankRun | None:
    """What the outcome says of a multi-rank server on CPU (None for one rank or on GPUs)."""
    asked = ranks_of(state.argv)
    if not ranks.on_cpu(asked, state.ctx.gpus):
        return None
    binding = env.get("VLLM_CPU_OMP_THREADS_BIND")
    state.outcome.evidence.notes.append(
        f"ran with {asked.world} ranks on CPU ({asked.describe()}): vLLM's CPU build, "
        f"one worker process per rank, threads bound '{binding}'"
    )
    return RankRun(asked.world, asked.tp, asked.pp, asked.dp, asked.ep, "cpu", binding)


def _server(state: JobState, env: dict[str, str], port: int) -> Server:
    """The server's process: in its container, in the sandbox (its port handed in as a listening
    socket; a trusted warm compile cache copied into its private /tmp), or plainly where neither."""
    job, ctx = state.job, state.ctx
    log = ctx.workdir / "logs" / f"{job.snippet.id}-{job.variant or 'doc'}-{job.target.target.name}-{job.tier}.log"
    image = job.target.target.docker
    shared = ctx.share_gpu > 1  # its GPU's memory after teardown says nothing about this server
    models = [*state.outcome.substitutions.values()]
    if image:
        name = f"driftmatrix-{job.snippet.id}-{port}"
        relay = unix_relay.UnixRelay(port)  # OSError when the port was taken meanwhile: the caller retries
        cmd = docker_target.server_command(
            image,
            name,
            serve_args(state.argv, port),
            {**ctx.base_env, **job.target.env, **literal_env(job)},
            models,
            state.gpu_ids,
            relay_dir=relay.dir,
            port=port,
        )
        return Server(
            cmd,
            env_policy.docker_cli_env(),
            log,
            port,
            state.gpu_ids,
            cleanup=docker_target.cleanup_command(name),
            relay=relay,
            shared_gpu=shared,
        )
    # the docs' own entry point: the legacy module runs as `python -m` does (its parser passed at parse)
    entry = [*job.target.vllm, "serve"]
    if job.snippet.entry_point:
        entry = [job.target.python, "-m", job.snippet.entry_point]
        state.outcome.evidence.notes.append(f"started as the page starts it: python -m {job.snippet.entry_point}")
    cmd = [*entry, *serve_args(state.argv, port)]
    if not detection.active():
        return Server(cmd, env, log, port, state.gpu_ids, shared_gpu=shared)
    listen = sandbox.listening_socket(port)  # OSError when the port was taken meanwhile: the caller retries
    warm, own = _compile_caches(state)
    infos = model_infos.ensure(job.target, ctx)
    # its compile cache lives in its private /tmp while it runs (held to the disk limits there), and is
    # handed out by its init once every process is gone: no folder of the runner's disk is writable to it
    launch = sandbox.contain(
        cmd,
        python=job.target.python,
        env=env,
        kind="server",
        jobs=ctx.jobs,
        ranks=ranks_of(state.argv).world if not state.gpu_ids else 1,
        readable=models,
        gpu=bool(state.gpu_ids),
        listen=listen,
        port=port,
        seeds=[
            *([(warm, "/tmp")] if warm else []),
            *([(infos, "/tmp/vllm-cache")] if infos else []),  # vLLM's inspections: runner/serve/model_infos.py
            *([(own, "/tmp/vllm-cache")] if own.is_dir() else []),
        ],
        watched=[compile_cache.INSIDE],
        export=[compile_cache.INSIDE],
        operator_env={**ctx.base_env, **job.target.env},
    )
    server = Server(launch.argv, launch.env, log, port, state.gpu_ids, launch=launch, shared_gpu=shared)
    server.after_stop = lambda: compile_cache.keep(launch, own, ctx.cache_dir)
    return server


def _compile_caches(state: JobState):
    """(the trusted warm-up's cache or None, this command's own from its last start on this build):
    runner/serve/compile_cache.py."""
    job, ctx = state.job, state.ctx
    key = "|".join(map(str, job.key()[:-1]))  # the command, variant, target, version, commit: not the tier
    own = compile_cache.own_folder(job.target, key, ctx.cache_dir)
    if own.is_dir():
        os.utime(own)  # recently used: kept longest
    return compile_cache.warm(job.target, ctx), own


def _one_start(state: JobState, env: dict[str, str], retry: bool) -> Verdict | str:
    """`ready` (the server stays in `state.server`), `port taken` (when `retry`), or the verdict."""
    out, ctx = state.outcome, state.ctx
    port = free_port()
    try:
        server = _server(state, env, port)
    except OSError as err:  # the sandbox relay could not take the port
        return "port taken" if retry else error(f"no free loopback port for the server's relay ({err})", "start")
    state.report("start")
    out.stage = "start"
    server.start()
    state.server = server
    ready = server.wait_ready(ctx.start_timeout)
    out.evidence.server = ServerRun(
        port, round(server.ready_s, 1) if server.ready_s else None, ready, ranks=_rank_run(state, env)
    )
    if ready == "ready":
        return "ready"
    lines = server.log_lines()
    state.server = None
    out.evidence.server = ServerRun.stopped(out.evidence.server, server.stop())
    read_log(out, lines)
    if hit := server.limit_hit():
        out.evidence.log_excerpt = logscan.excerpt(lines)
        return error(sandbox_limit(hit), "start")
    return _not_ready(state, ready, lines, out.evidence.server.returncode, retry)


def _not_ready(state: JobState, ready: str, lines: list[str], returncode, retry: bool) -> Verdict | str:
    ev = state.outcome.evidence
    if ready == "timeout":
        ev.log_excerpt = logscan.excerpt(lines)
        return error(f"no /health 200 within our deadline of {state.ctx.start_timeout:.0f} s (server killed)", "start")
    if crash := crashed(state, "start", lines):
        return crash
    tbs = logscan.tracebacks(lines)
    root = classify.root_cause(tbs)
    if root is None:
        ev.log_excerpt = logscan.excerpt(lines)
        return error(
            f"server exited with status {returncode} before /health without a traceback (killed? out of memory?)",
            "start",
        )
    ev.log_excerpt = logscan.excerpt(lines, root.end)
    sig = classify.match_signature(f"{root.type}: {root.message}")
    if sig and sig.id == "port-in-use" and retry:
        return "port taken"
    exc = RaisedException(
        root.type,
        root.message,
        root.location(),
        final=f"{tbs[-1].type}: {tbs[-1].message}"[:500] if tbs[-1] is not root else None,
    )
    exc.keep_none("final")  # the start tier says "none" when the last traceback is the root cause
    frames = "\n".join(f'File "{f["path"]}", line {f["line"]}, in {f["function"]}' for f in root.frames)
    return fail(state, "start", exc, ev.log_excerpt, frames)
