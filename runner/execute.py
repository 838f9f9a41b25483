"""One job = one snippet (or its counterfactual variant) × one target, through the tiers.

parse and config run in the target's long-lived helper; start and probe run a real
`vllm serve`.  Each tier is a real execution and the first failing one decides.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import socket
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import httpx

from extractor.records import Snippet
from extractor.shell_commands import SPEC_FLAGS, option_value
from runner import classify, docker_target, logscan, perf, probes, source_trees, standins
from runner.argv_edit import VARIANTS, devices_needed, variant_argv
from runner.envs import TargetEnv
from runner.helper_client import Helper, HelperError
from runner.models import ModelResolver, estimated_bytes, has_weights, needed_models, substitute
from runner.records import TIERS, JobKey, Outcome, TargetRef
from runner.redact import Redactor
from runner.settings import START_TIMEOUT_S, cache_dir
from runner.server import Server, free_port, gpu_memory_used, serve_args

TOOL_FLAGS = ("--enable-auto-tool-choice", "--tool-call-parser")


@dataclass
class Job:
    snippet: Snippet
    target: TargetEnv
    tier: str
    variant: str | None = None

    def key(self) -> JobKey:
        t = self.target
        return JobKey(self.snippet.id, self.variant, t.target.name, t.version, t.commit, self.tier)


@dataclass
class RunContext:
    resolver: ModelResolver
    workdir: Path
    """Server logs and helper logs go here."""
    base_env: dict[str, str] = field(default_factory=dict)
    start_timeout: float = START_TIMEOUT_S
    gpus: int = 0
    gpu_mem_gb: float | None = None
    redact: Redactor = field(default_factory=Redactor)
    helpers: dict[str, Helper] = field(default_factory=dict)
    stand_ins: str | None = None
    """None, `tiny` (2-layer twins) or `full` (the source's sizes, random weights: for perf on a GPU)."""
    """Replace models that cannot be had by twins built in the target's env."""
    cache_dir: Path = field(default_factory=cache_dir)

    def helper(self, target: TargetEnv) -> Helper:
        name = target.target.name
        if name not in self.helpers:
            env = {**self.base_env, **target.env}
            if not self.resolver.hub:
                env["HF_HUB_OFFLINE"] = "1"
            command = None
            if target.target.docker:
                command = docker_target.helper_command(target.target.docker, list(self.resolver.model_map.values()),
                                                       {**env, **target.env})
            self.helpers[name] = Helper(target.python, env, self.workdir / f"helper-{name}.log", command=command)
        return self.helpers[name]

    def close(self) -> None:
        for helper in self.helpers.values():
            helper.close()


@functools.lru_cache(maxsize=1)
def _host_facts() -> dict:
    facts = {"hostname": socket.gethostname(), "cpus": os.cpu_count(), "platform": platform.platform()}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            facts["gpus"] = [line.strip() for line in out.stdout.strip().splitlines()]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return facts


def host_facts() -> dict:
    """The machine, looked up once per process (a copy: outcomes must not share it)."""
    return dict(_host_facts())


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _exception(err: dict | None) -> dict | None:
    if not err:
        return None
    return {"type": err.get("type"), "message": err.get("message"), "location": err.get("location"),
            "traceback": err.get("traceback")}


class JobRunner:
    """Runs jobs; `on_stage(job, stage)` reports progress."""

    def __init__(self, ctx: RunContext, on_stage=lambda job, stage: None):
        self.ctx, self.on_stage = ctx, on_stage

    def run(self, job: Job, gpu_ids: list[int] | None = None) -> Outcome:
        t0 = time.monotonic()
        info = job.target.info
        out = Outcome(snippet_id=job.snippet.id, variant=job.variant, tier=job.tier, stage="parse", verdict="PASS",
                      target=TargetRef(job.target.target.name, job.target.version, job.target.commit,
                                       info.get("distribution"), info.get("torch"), info.get("transformers"),
                                       info.get("torch_cuda")),
                      started=_now(), host=host_facts())
        try:
            self._run(job, out, gpu_ids or [])
        except HelperError as err:
            self._set(out, "ERROR", f"the parse/config helper failed (ours, not the docs'): {err}")
        out.duration_s = round(time.monotonic() - t0, 2)
        self._redact(out)
        return out

    # -- helpers -------------------------------------------------------------------------
    def _set(self, out: Outcome, verdict: str, reason: str | None, stage: str | None = None) -> None:
        out.verdict, out.reason = verdict, reason
        if stage:
            out.stage = stage

    def _redact(self, out: Outcome) -> None:
        r = self.ctx.redact
        out.argv = r(out.argv)
        out.reason = r(out.reason)
        ev = out.evidence
        ev.exception, ev.warnings, ev.log_excerpt = r(ev.exception), r(ev.warnings), r(ev.log_excerpt)
        ev.probes, ev.notes, ev.effective_config = r(ev.probes), r(ev.notes), r(ev.effective_config)

    def _fail(self, out: Outcome, stage: str, exc: dict | None, excerpt: str | None = None) -> None:
        sig = classify.match_signature(exc and f"{exc.get('type')}: {exc.get('message')}", excerpt,
                                       device="gpu" if self.ctx.gpus else "cpu")
        out.evidence.exception = exc
        out.evidence.signature = {"id": sig.id, "explanation": sig.explanation} if sig else None
        one_line = _one_line(exc) if exc else "see the log excerpt"
        if sig and sig.blame == "unavailable":
            self._set(out, "SKIP", f"{sig.explanation} ({one_line})", stage)
        elif sig and sig.blame == "infra":
            self._set(out, "ERROR", f"infrastructure: {sig.explanation} ({one_line})", stage)
        else:
            self._set(out, "FAIL", one_line, stage)

    # -- the tiers -----------------------------------------------------------------------
    def _run(self, job: Job, out: Outcome, gpu_ids: list[int]) -> None:
        snippet, ctx = job.snippet, self.ctx
        tier_n = TIERS.index(job.tier)
        argv = variant_argv(snippet, job.variant)
        ev = out.evidence
        if snippet.kind == "python":
            ev.notes.append("python snippet: LLM(...) keyword arguments run as the equivalent `vllm serve` flags")
        if snippet.kind == "docker" and job.target.target.kind != "docker":
            ev.notes.append(f"docker snippet: image {snippet.image} not used; its server arguments ran "
                            f"against {job.target.target.name}")
        placeholders = snippet.placeholders
        # A placeholder still lets the parse tier check the flags; fragments, unbalanced
        # quotes, --config FILE and --help do not run at all.
        if not snippet.runnable and not (snippet.reason or "").startswith("placeholder"):
            out.argv = argv
            return self._set(out, "SKIP", f"not runnable as written: {snippet.reason}")

        models = needed_models(snippet) if not placeholders else []
        if job.variant in VARIANTS:
            models = models[:1]
        subs, missing = ctx.resolver.resolve(models)
        why_not: list[str] = []
        configs_only = {m: subs.pop(m) for m in models if ctx.stand_ins and m in subs and not has_weights(subs[m])}
        missing += [m for m in models if m in configs_only]
        if missing and ctx.stand_ins:
            self.on_stage(job, "stand-in")
            missing, why_not = self._stand_ins(job, models, subs, missing, ev, configs_only)
        if source_trees.names_source_files(argv) and not job.target.target.docker:
            files = source_trees.files_named(argv, source_trees.source_tree(job.target.version, ctx.cache_dir))
            subs.update(files)
            if files:
                ev.notes.append(f"{', '.join(files)}: taken from the vllm {job.target.version} sdist (the docs "
                                "assume a vLLM checkout)")
        argv = substitute(argv, subs)
        out.argv, out.substitutions = argv, subs
        out.stand_in = any(ctx.resolver.is_stand_in(p) for p in subs.values())
        want_config = tier_n >= 1 and not placeholders and not missing

        self.on_stage(job, "config" if want_config else "parse")
        answer = ctx.helper(job.target).ask(argv, "config" if want_config else "parse", env=_literal_env(snippet))
        ev.warnings.extend({**w, "feature": classify.is_feature_warning(w["message"])} for w in answer.get("warnings", []))
        ev.effective_config.update(answer.get("effective_config") or {})
        stage = answer.get("stage", "parse")
        if answer.get("ok") is None:
            return self._set(out, "SKIP", answer.get("skip"), stage)
        if not answer.get("ok"):
            err = answer.get("error") or {}
            message = err.get("message") or ""
            unknown_flag = "unrecognized arguments" in message and not any(p in message for p in placeholders)
            if placeholders and not unknown_flag:  # a value we had to leave unfilled may be the cause
                return self._set(out, "SKIP", f"placeholder {', '.join(placeholders)} must be filled in "
                                              f"(parse error on it: {err.get('message')})", stage)
            return self._fail(out, stage, _exception(err))
        out.stage = stage
        if tier_n == 0:
            return self._finish(out)
        if placeholders:
            return self._set(out, "SKIP", f"placeholder {', '.join(placeholders)} must be filled in", "config")
        if missing:
            return self._set(out, "SKIP", f"model {', '.join(missing)} not available here (no model-map entry, "
                                          "Hugging Face hub unreachable"
                                          + (f"; no stand-in: {'; '.join(why_not)}" if why_not else "") + ")",
                             "config")
        if tier_n == 1:
            return self._finish(out)

        need = devices_needed(argv)
        have = max(ctx.gpus, 1)
        if need > have:
            where = f"{ctx.gpus} GPU(s)" if ctx.gpus else "CPU (one device)"
            return self._set(out, "SKIP", f"needs {need} devices (tensor x pipeline x data parallel); "
                                          f"this run has {where}", "start")
        if ctx.gpu_mem_gb and snippet.model:
            size = estimated_bytes(snippet.model, subs.get(snippet.model))
            if size and size > ctx.gpu_mem_gb * 1e9 * need:
                return self._set(out, "SKIP", f"model weights ~{size / 1e9:.0f} GB exceed --gpu-mem "
                                              f"{ctx.gpu_mem_gb} GB x {need}", "start")
        self._serve(job, out, argv, gpu_ids, tier_n)

    def _stand_ins(self, job: Job, models: list[str], subs: dict, missing: list[str], ev,
                   configs: dict[str, str]) -> tuple[list[str], list[str]]:
        """Twins for the missing models (the served one first; a draft shares its tokenizer).

        `configs`: model-map entries that hold a config.json but no weights: the twin's source.
        """
        still, why_not = [], []
        for i, model in enumerate(models):
            if model not in missing:
                continue
            served = subs.get(models[0]) or (models[0] if Path(models[0]).is_dir() else None)
            try:
                twin = standins.ensure(model, job.target, self.ctx.cache_dir, layers=2 if i == 0 else 1,
                                       tokenizer_from=served if i > 0 else None, config_from=configs.get(model),
                                       full_size=self.ctx.stand_ins == "full")
            except standins.StandInError as err:
                still.append(model)
                why_not.append(str(err))
                continue
            subs[model] = twin.dir
            pattern = f" {'/'.join(t.split('_')[0] for t in twin.layer_types)}" if twin.layer_types else ""
            extra = "".join(f"; {n}" for n in twin.notes or [])
            size = "full-size " if twin.full_size else ""
            pattern = "" if twin.full_size else pattern  # a full-size pattern is the source's, dozens long
            ev.notes.append(f"{model}: stand-in {size}{twin.family} twin ({twin.config_source}; transformers "
                            f"{twin.transformers}; {twin.layers} layer(s){pattern}; random weights{extra})")
        return still, why_not

    def _serve(self, job: Job, out: Outcome, argv: list[str], gpu_ids: list[int], tier_n: int) -> None:
        ctx, ev, snippet = self.ctx, out.evidence, job.snippet
        env = {**os.environ, **ctx.base_env, **job.target.env, **_literal_env(snippet)}
        if gpu_ids:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpu_ids))
        if not ctx.resolver.hub:
            env["HF_HUB_OFFLINE"] = "1"
        api_key = option_value(argv, "--api-key") or env.get("VLLM_API_KEY")
        ctx.redact.add(api_key)
        for attempt in (1, 2):
            port = free_port()
            log = ctx.workdir / "logs" / f"{snippet.id}-{job.variant or 'doc'}-{job.target.target.name}-{job.tier}.log"
            if job.target.target.docker:
                name = f"driftmatrix-{snippet.id}-{port}"
                cmd = docker_target.server_command(
                    job.target.target.docker, name, serve_args(argv, port),
                    {**ctx.base_env, **job.target.env, **_literal_env(snippet)}, list(out.substitutions.values()), gpu_ids)
                server = Server(cmd, env, log, port, gpu_ids, cleanup=docker_target.cleanup_command(name))
            else:
                server = Server([*job.target.vllm, "serve", *serve_args(argv, port)], env, log, port, gpu_ids)
            self.on_stage(job, "start")
            out.stage = "start"
            server.start()
            try:
                state = server.wait_ready(ctx.start_timeout)
                lines = server.log_lines()
                if state == "ready":
                    if tier_n >= 3:
                        self.on_stage(job, "probe")
                        self._probe(out, server, argv, snippet, api_key)
                    if tier_n >= 4 and out.verdict == "PASS" and server.alive():
                        self.on_stage(job, "perf")
                        self._perf(out, server, api_key, gpu_ids)
                    lines = server.log_lines()
            finally:
                teardown = server.stop()
            self._read_log(out, lines)
            ev.server = {"port": port, "ready_s": round(server.ready_s, 1) if server.ready_s else None,
                         "state": state, **teardown}
            if state == "ready":
                return self._finish(out)
            if state == "timeout":
                ev.log_excerpt = logscan.excerpt(lines)
                return self._set(out, "ERROR", f"no /health 200 within our deadline of {ctx.start_timeout:.0f} s "
                                               "(server killed)", "start")
            tbs = logscan.tracebacks(lines)
            root = classify.root_cause(tbs)
            if root is None:
                ev.log_excerpt = logscan.excerpt(lines)
                rc = teardown.get("returncode")
                return self._set(out, "ERROR", f"server exited with status {rc} before /health without a "
                                               "traceback (killed? out of memory?)", "start")
            ev.log_excerpt = logscan.excerpt(lines, root.end)
            exc = {"type": root.type, "message": root.message, "location": root.location(),
                   "final": f"{tbs[-1].type}: {tbs[-1].message}"[:500] if tbs[-1] is not root else None}
            sig = classify.match_signature(f"{root.type}: {root.message}")
            if sig and sig.id == "port-in-use" and attempt == 1:
                ev.notes.append(f"port {port} was taken; retried on another")
                continue
            return self._fail(out, "start", exc, ev.log_excerpt)

    def _probe(self, out: Outcome, server: Server, argv: list[str], snippet: Snippet, api_key: str | None) -> None:
        out.stage = "probe"
        served = out.substitutions.get(snippet.model or "", snippet.model or "")
        multimodal = bool(served) and self.ctx.resolver.is_multimodal(served)
        tools = any(t.split("=")[0] in TOOL_FLAGS for t in argv)
        spec = any(t.split("=")[0].split(".")[0] in SPEC_FLAGS for t in argv)
        ctx = probes.ProbeContext(f"http://127.0.0.1:{server.port}", "", server.alive)
        results, metrics = probes.run(ctx, tools, multimodal, spec, api_key=api_key)
        out.evidence.probes = results
        out.evidence.spec_decode = metrics
        failed = [p for p in results if not p["ok"]]
        if failed:
            lines = server.log_lines()
            root = classify.root_cause(logscan.tracebacks(lines))
            first = failed[0]
            if root:
                self._fail(out, "probe", {"type": root.type, "message": root.message, "location": root.location()},
                           logscan.excerpt(lines, root.end))
                out.reason = f"probe {first['name']}: {out.reason}"
            else:
                self._set(out, "FAIL", f"probe {first['name']} failed: status {first['status']} "
                                       f"{str(first.get('detail'))[:200]}", "probe")

    def _perf(self, out: Outcome, server: Server, api_key: str | None, gpu_ids: list[int]) -> None:
        out.stage = "perf"
        try:
            out.evidence.perf = perf.measure(f"http://127.0.0.1:{server.port}", api_key=api_key)
        except (httpx.HTTPError, ValueError, KeyError, IndexError) as err:
            return self._set(out, "ERROR", f"perf measurement failed: {type(err).__name__}: {err}"[:500], "perf")
        out.evidence.perf["device"] = "gpu" if gpu_ids else "cpu"
        if gpu_ids:  # while the server still holds its weights, KV cache and graphs
            out.evidence.perf["gpu_mib_used"] = gpu_memory_used(gpu_ids)
        if not out.evidence.perf["concurrent"].get("completed"):
            self._set(out, "FAIL", f"perf: no request completed ({out.evidence.perf['concurrent']['errors']})", "perf")

    def _read_log(self, out: Outcome, lines: list[str]) -> None:
        ev = out.evidence
        ev.warnings.extend(classify.warning_records(logscan.warnings(lines)))
        for key, value in {**logscan.engine_config(lines), **logscan.memory_facts(lines)}.items():
            ev.effective_config.setdefault(key, value)

    def _finish(self, out: Outcome) -> None:
        if out.verdict != "PASS":
            return
        feature = [w for w in out.evidence.warnings if w.get("feature")]
        if feature:
            w = feature[0]
            self._set(out, "WARN", f"vLLM warns: {w['message'][:300]} [{w['file']}:{w['line']}]")


def _one_line(exc: dict) -> str:
    """`Type: message` on one line; pydantic's first line only counts errors, so add the next."""
    lines = [ln.strip() for ln in str(exc.get("message") or "").splitlines() if ln.strip()]
    text = " ".join(lines[:2]) if lines and re.match(r"\d+ validation errors? for", lines[0]) else (lines or [""])[0]
    return f"{exc.get('type')}: {text}"[:300]


def _literal_env(snippet: Snippet) -> dict[str, str]:
    """The snippet's env assignments that are values, not placeholders."""
    return {k: v for k, v in snippet.env.items() if "$" not in v and "<" not in v}
