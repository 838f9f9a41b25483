"""One command's page (snippets/<id>.md): the command as the docs show it, where it appears,
its judgement, its speed beside its variants', and per build the verdict with its evidence.

What is shown is worded here (plain words, a unit on every figure); the template only lays it
out. Every value from docs or logs still reaches the page escaped: jinja's autoescape, the
`md`/`fence` filters, or the `Markup` built here from `html.escape`d parts only."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime

from jinja2 import Environment
from markupsafe import Markup

from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.publisher import addresses, causes, command_text, perf_view, verdict_words
from driftmatrix.publisher.command_view import CommandView, CommandViews
from driftmatrix.runner.outcomes import subcommands
from driftmatrix.runner.outcomes.outcome_record import Outcome
from driftmatrix.runner.outcomes.vocabulary import GOOD, ICONS, PLAIN_STAGE, stage_rank

COMMAND_WIDTH = 80
"""A one-line command longer than this is shown one option per line, with ` \\` continuations."""

PROBES = {
    "models": "list models",
    "json_schema": "structured output (json_schema)",
    "chat": "chat",
    "stream": "streaming chat",
    "tools": "tool call",
    "tool": "tool call",
    "image": "image input",
}

CONFIG_UNITS = (
    ("_gib", "GiB"),
    ("_mib", "MiB"),
    ("_s", "s"),
    ("_tokens", "tokens"),
    ("max_model_len", "tokens"),
    ("max_num_seqs", "sequences"),
)


# --- the command, wrapped at argument boundaries ---------------------------------------------


def _words(text: str) -> list[str] | None:
    """The shell words of a one-line command as written (quotes kept), or None for anything but one
    plain command (a list or pipeline, a comment, a heredoc, a substitution, an unclosed quote). A
    `<model>` placeholder is a word here: a ` \\` + newline between words changes nothing for bash."""
    words, cur, i, n = [], "", 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t":
            if cur:
                words.append(cur)
                cur = ""
            i += 1
            continue
        if ch in ";&|()`\n" or (ch == "#" and not cur) or text.startswith(("$(", "<<"), i):
            return None
        if ch == "\\":
            cur, i = cur + text[i : i + 2], i + 2
            continue
        if ch in "'\"" or text.startswith("$'", i):
            ansi = ch == "$"
            quote, escapes = ("'", True) if ansi else (ch, ch == '"')
            j = i + (2 if ansi else 1)
            while j < n and text[j] != quote:
                j += 2 if escapes and text[j] == "\\" else 1
            if j >= n:
                return None
            cur, i = cur + text[i : j + 1], j + 1
            continue
        cur, i = cur + ch, i + 1
    if cur:
        words.append(cur)
    return words


def _is_option(word: str, previous: str) -> bool:
    if not word.startswith("-") or word[1:2].isdigit() or word in ("-", "--"):
        return False
    return not (word == "-m" and previous.rsplit("/", 1)[-1].startswith("python"))


def wrapped_command(text: str, width: int = COMMAND_WIDTH) -> str:
    """The docs' command with one option (and its values) per line when its one line is long: bash
    reads it as the same words (a ` \\` + newline is removed), so the copy button copies a runnable
    command. Anything already on several lines, or not a plain command, is left as written."""
    text = text.strip()
    if "\n" in text or len(text) <= width:
        return text
    words = _words(text)
    if not words:
        return text
    lines: list[list[str]] = [[]]
    for k, w in enumerate(words):
        if lines[-1] and (_is_option(w, words[k - 1]) or w.startswith("vllm/vllm-")):
            lines.append([])
        lines[-1].append(w)
    return " \\\n    ".join(" ".join(line) for line in lines)


# --- small pieces of HTML built from escaped parts -------------------------------------------


def lines_html(text) -> Markup:
    """Text of several lines (an exception message) as lines: escaped, blank lines dropped (a blank
    line would end the page's raw-HTML block)."""
    return Markup("<br>".join(html.escape(ln.rstrip()) for ln in str(text or "").splitlines() if ln.strip()))


def _one(text) -> str:
    return " ".join(str(text or "").split())


# --- what one build's section says ------------------------------------------------------------


def checked(o: Outcome, s: Snippet | None = None) -> str:
    """`requests answered` / `server start, where it stopped (it was to go on up to: requests answered)`;
    a subcommand snippet (`vllm bench throughput …`): its own argument parser, and no further."""
    planned = PLAIN_STAGE.get(o.tier, o.tier)
    if verdict_words.parser_only(o, s):
        return (
            f"the argument parser of {subcommands.program(s)}, which accepted it; not run further: it is not a server"
        )
    if s is not None and subcommands.words(s) and o.verdict in GOOD + ("FAIL",) and o.stage == "parse":
        return f"the argument parser of {subcommands.program(s)}" + (
            ", where it stopped" if o.verdict == "FAIL" else ""
        )
    if o.verdict in GOOD:
        return PLAIN_STAGE.get(o.stage, o.stage) + ("" if o.stage == o.tier else f" (it was to go on up to: {planned})")
    if o.verdict == "FAIL":  # a model the hub says no reader can load fails at config even in a parse job
        return f"{PLAIN_STAGE.get(o.stage, o.stage)}, where it stopped" + (
            "" if stage_rank(o.stage) >= stage_rank(o.tier) else f" (it was to go on up to: {planned})"
        )
    return f"not checked (it was to go up to: {planned})"


def models(s: Snippet, o: Outcome) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """([(role, model as documented, the twin's id)], other substitutions) for the Model row."""
    twins, other = [], {}
    for name, used in o.substitutions.items():
        if str(used).startswith("stand-in "):
            role = (
                "model" if name == s.model else "draft" if name == (s.speculative_config or {}).get("model") else "also"
            )
            twins.append((role, name, str(used).rsplit(" ", 1)[-1]))
        else:
            other[name] = used
    return twins, other


def model_summary(o: Outcome) -> str:
    """The Verdicts table's Model cell."""
    if o.stand_in:
        return "random-weight twin" if causes.documented_twin(o) else "a placeholder's stand-in"
    return "not loaded" if o.stage == "parse" or o.verdict == "SKIP" else "as documented"


def ran(o: Outcome) -> str:
    """`2026-12-02 18:55 UTC · took 307 s (server ready after 162 s) · GPU: NVIDIA H200 (driver 580.159.04)`."""
    try:
        at = datetime.fromisoformat(o.started.replace("Z", "+00:00"))
        when = (at.astimezone(UTC) if at.tzinfo else at).strftime("%Y-%m-%d %H:%M UTC")
    except (ValueError, AttributeError):
        when = o.started or "time not recorded"
    parts = [when, f"took {perf_view.number(o.duration_s, 's')}"]
    ready = o.evidence.server and o.evidence.server.ready_s
    if ready is not None:
        parts[-1] += f" (server ready after {perf_view.number(ready, 's')})"
    if verdict_words.ranks_text(o):
        parts.append(verdict_words.ranks_text(o))
    gpus = [str(g) for g in (o.host or {}).get("gpus") or []]
    if gpus:
        names = {}
        for g in gpus:
            name, _, driver = g.partition(",")
            names.setdefault((name.strip(), driver.strip()), 0)
            names[(name.strip(), driver.strip())] += 1
        parts.append(
            "; ".join(
                f"GPU: {f'{k} × ' if k > 1 else ''}{name}" + (f" (driver {drv})" if drv else "")
                for (name, drv), k in names.items()
            )
        )
    elif (o.host or {}).get("cpus"):
        parts.append(f"no GPU, {o.host['cpus']} CPU cores")
    parts.append(contained(o))
    return " · ".join(p for p in parts if p)


def contained(o: Outcome) -> str:
    """Whether the docs' code ran in the sandbox (runner/sandbox), in plain words ("" when the
    outcome does not say)."""
    host = o.host or {}
    how = str(host.get("sandbox", ""))
    if not how:
        return ""
    if host.get("contained") or ("contained" not in host and how.startswith("bubblewrap")):
        return "in a sandbox"
    return "NOT in a sandbox (plain processes" + (", by request" if "by request" in how else "") + ")"


def build(o: Outcome) -> str:
    t = o.target
    text = f"vLLM {t.version}" + (
        f" (package {t.distribution}" + (f", commit {t.commit})" if t.commit else ")")
        if t.distribution
        else f" (commit {t.commit})"
        if t.commit
        else ""
    )
    if t.torch:
        text += f" · torch {t.torch}" + (f" (CUDA {t.torch_cuda})" if t.torch_cuda else "")
    if t.transformers:
        text += f" · transformers {t.transformers}"
    if t.without:  # said on every page: this build is not quite the wheel as published
        text += f" · installed without {', '.join(t.without)} (not on the package index)"
    if t.label:
        text += f" · {t.label}"
    return text


def reason_shown(o: Outcome) -> str:
    """The verdict's reason when it says more than the exception and the warnings shown with it
    (a FAIL's reason is its exception's first line, a WARN's its first feature warning: once is enough)."""
    reason = o.reason or ""
    exc = o.evidence.exception
    if exc and reason.startswith(f"{exc.type}: "):
        return ""  # a FAIL's reason: the exception's first line
    if exc and f"({exc.type}: " in reason:  # a SKIP's or ERROR's: an explanation (the exception)
        kept = reason.split(f"({exc.type}: ", 1)[0].strip()
        explanation = (o.evidence.signature and o.evidence.signature.explanation) or "\0"
        return "" if kept.endswith(explanation) else kept
    if o.verdict == "WARN" and reason.startswith("vLLM warns: ") and any(w.feature for w in o.evidence.warnings):
        return ""
    return reason


def short_cause(o: Outcome) -> str:
    """The Verdicts table's cause: where, not the whole message (that is in the build's section)."""
    exc = o.evidence.exception
    if o.verdict == "FAIL" and exc:
        where = causes.location(exc).rsplit("/", 1)[-1]
        return f"{exc.type}" + (f" at {where}" if where else "")
    if o.verdict == "WARN":
        feature = [w for w in o.evidence.warnings if w.feature]
        if feature:
            return f"vLLM warns (at {str(feature[0].file).rsplit('/', 1)[-1]}:{feature[0].line})"
    sig = o.evidence.signature
    if sig:
        return sig.id or ""
    return causes.clip_public(o.reason or "", 100)


def warnings(o: Outcome) -> tuple[list[dict], list[dict], int]:
    """(about this command's features, host and runtime noise grouped, how many noise lines): a
    warning logged twice (by two processes, once with its logger) is one row with a count."""
    feature, noise = [], []
    for w in o.evidence.warnings:
        group = feature if w.feature else noise
        key = (_one(w.message), str(w.file).rsplit("/", 1)[-1], w.line)
        same = next((g for g in group if g["key"] == key), None)
        if same:
            same["count"] += 1
            if len(str(w.file)) > len(same["file"]):
                same["file"] = str(w.file)
            continue
        group.append(
            {
                "key": key,
                "message": key[0],
                "file": str(w.file),
                "line": w.line,
                "process": w.process or w.logger or "",
                "count": 1,
            }
        )
    return feature, noise, sum(g["count"] for g in noise)


def config_rows(o: Outcome) -> list[tuple[str, str]]:
    """The effective config with a unit on each figure (`model_memory_gib` 9.53 GiB)."""
    rows = []
    for k, v in o.evidence.effective_config.items():
        unit = next((u for suffix, u in CONFIG_UNITS if k.endswith(suffix)), "")
        text = json.dumps(v) if isinstance(v, (list, dict)) else str(v)
        rows.append(
            (k, f"{text}\u00a0{unit}" if unit and isinstance(v, (int, float)) and not isinstance(v, bool) else text)
        )
    return rows


def probes(o: Outcome) -> list[dict]:
    return [
        {
            "name": p.name,
            "what": PROBES.get(p.name, str(p.name)),
            "ok": p.ok,
            "status": p.status,
            "detail": p.detail,
            "time": perf_view.number(p.duration_s, "s") if p.duration_s is not None else "—",
        }
        for p in o.evidence.probes
    ]


def gpu_memory(o: Outcome) -> str:
    used = (o.evidence.perf and o.evidence.perf.gpu_mib_used) or []
    return ", ".join(perf_view.number(m / 1024, "GiB") for m in used if isinstance(m, (int, float)))


def section(s: Snippet, o: Outcome) -> dict:
    twins, other = models(s, o)
    feature, noise, noise_n = warnings(o)
    return {
        "checked": checked(o, s),
        "twins": twins,
        "substituted": other,
        "ran": ran(o),
        "build": build(o),
        "reason": reason_shown(o),
        "location": causes.location(o.evidence.exception),
        "argv": wrapped_command(command_text.run_as(s, o.argv)) if o.argv else "",
        "feature": feature,
        "noise": noise,
        "noise_n": noise_n,
        "spec": perf_view.spec_counters(o.evidence.spec_decode),
        "config": config_rows(o),
        "probes": probes(o),
        "options": causes.option_notes(o, s),
        "gpu_memory": gpu_memory(o),
        "documented_twin": causes.documented_twin(o),
        "perf_acceptance": perf_view.acceptance(o.evidence.perf and o.evidence.perf.spec_decode),
    }


# --- the page ---------------------------------------------------------------------------------


def render(env: Environment, commands: CommandViews, view: CommandView) -> str:
    results, s = commands.results, view.snippet
    rows = [(c, o) for c in results.columns if (o := view.outcomes.get(c.key))]
    diffs = config_differences({c.key: o for c, o in rows})
    variants = [
        {
            "variant": name,
            "what": perf_view.VARIANTS.get(name, name),
            "label": c.label,
            "key": c.key,
            "o": o,
            "depth": verdict_words.depth_text(o, s),
            "cause": causes.cause(o),
        }
        for name in results.variants(s.id)
        for c in results.columns
        if (o := results.cell(s.id, c, name))
    ]
    retired = [(c, o) for c in results.retired if (o := view.outcomes.get(c.key))]
    fix = view.fix_candidate
    return env.get_template("snippet.md.j2").render(
        s=s,
        title=view.title,
        command=wrapped_command(view.command),
        flags=view.flags,
        spec_json=json.dumps(s.speculative_config) if s.speculative_config else "",
        page_slugs=[addresses.page_slug(addresses.page_key(src)) for src in s.sources],
        judgements=view.judgements,
        source_judgements=[j.kind for j in view.at_sources],
        rows=rows,
        depths={c.key: verdict_words.depth_text(o, s) for c, o in rows},
        subcommand=subcommands.program(s) if subcommands.words(s) else "",
        short_causes={c.key: short_cause(o) for c, o in rows},
        models={c.key: model_summary(o) for c, o in rows},
        sections={c.key: section(s, o) for c, o in rows},
        speed=perf_view.tables(results, s.id, bool(s.speculative_config)),
        diffs=diffs,
        flipped=[k for k, vals in diffs.items() if all(isinstance(v, bool) for v in vals.values())],
        icons=ICONS,
        variants=variants,
        seen=view.seen,
        retired=retired,
        lines=lines_html,
        fix=fix,
        fix_command=wrapped_command(fix.fix["text"]) if fix else "",
        fix_verified=view.fix,
    )


def config_differences(by_column: dict[str, Outcome]) -> dict[str, dict[str, object]]:
    """Effective-config keys whose values differ between targets: key -> {column: value}.
    Paths (model dirs, the draft's) differ by construction and are left out."""
    keys = sorted({k for o in by_column.values() for k in o.evidence.effective_config})
    out = {}
    for k in keys:
        if k in ("model", "draft_model", "speculative_config", "engine_version"):
            continue
        values = {
            col: o.evidence.effective_config.get(k) for col, o in by_column.items() if k in o.evidence.effective_config
        }
        if len(values) > 1 and len({repr(v) for v in values.values()}) > 1:
            out[k] = values
    return out
