"""A command page's "Speed" section: per build, the documented command and each of its variants
side by side (decode tok/s of one stream, total tok/s of N streams, time to first token, draft
acceptance), with the ratio to `no-spec` (the same command without its speculative config), and
the sentences a reader needs to read them: a random-weight draft is almost never accepted, so a
slowdown there says nothing about real models; `self-spec` is the acceptance upper bound."""

from __future__ import annotations

from dataclasses import dataclass, field

from driftmatrix.publisher.results import Column, Results
from driftmatrix.runner.outcomes.outcome_record import Outcome

VARIANTS = {
    None: "as documented",
    "no-spec": "no-spec: without the speculative config",
    "self-spec": "self-spec: the model as its own draft",
    "fix": "fix: the command under “Fix”",
}
"""How each run is named in the table (any other variant by its own name)."""

SPEC_LABELS = {
    "num_drafts": ("drafting steps", ""),
    "num_draft_tokens": ("draft tokens proposed", ""),
    "num_accepted_tokens": ("accepted", ""),
}


def number(value, unit: str = "") -> str:
    """`136 tok/s`, `4,521 tok/s`, `31.5 tok/s`, `0.031 s`, `9.22 s`: a figure with its unit."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—" if value is None else str(value)
    if unit == "s":
        text = f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
    elif float(value).is_integer() or abs(value) >= 100:
        text = f"{value:,.0f}"
    else:
        text = f"{value:.1f}"
    return f"{text}\u00a0{unit}" if unit else text  # no line break between a figure and its unit


def percent(part, whole) -> str:
    if not whole:
        return "—"
    p = 100 * part / whole
    return f"{p:.0f}\u00a0%" if p == 0 or p >= 10 else f"{p:.1f}\u00a0%"  # no line break inside "0 %"


def acceptance(counters: dict | None) -> str:
    """`0 of 17,368 draft tokens accepted (0 %)`; empty without counters."""
    if not counters or not counters.get("num_draft_tokens"):
        return ""
    proposed, accepted = counters.get("num_draft_tokens") or 0, counters.get("num_accepted_tokens") or 0
    return f"{number(accepted)} of {number(proposed)} draft tokens accepted ({percent(accepted, proposed)})"


def spec_counters(counters: dict | None) -> str:
    """The probe tier's spec-decode counters in words: `draft tokens proposed: 180 · accepted: 0 (0 %)
    · drafting steps: 92`."""
    if not counters:
        return ""
    parts = []
    proposed = counters.get("num_draft_tokens")
    if proposed is not None:
        parts.append(f"draft tokens proposed: {number(proposed)}")
    if "num_accepted_tokens" in counters:
        accepted = counters["num_accepted_tokens"]
        parts.append(f"accepted: {number(accepted)}" + (f" ({percent(accepted, proposed)})" if proposed else ""))
    if "num_drafts" in counters:
        parts.append(f"drafting steps: {number(counters['num_drafts'])}")
    for k, v in counters.items():
        if k not in SPEC_LABELS and k != "acceptance_rate":
            parts.append(f"{k.replace('_', ' ')}: {number(v)}")
    return " · ".join(parts)


@dataclass
class Run:
    """One row: a run of the command or of a variant on one build."""

    name: str
    variant: str | None
    o: Outcome
    cells: list[tuple[str, str, str]] = field(default_factory=list)
    """(column head, figure with its unit, ratio to no-spec) per figure; empty when not measured."""
    accepted: str = ""


@dataclass
class SpeedTable:
    column: Column
    device: str
    tokens: int
    heads: list[str]
    runs: list[Run]
    baseline: bool
    """A no-spec run was measured: the ratios are to it."""
    acceptance: bool
    """Show the draft-acceptance column (a speculative config somewhere in the table)."""
    sentences: list[str]


def _figures(o: Outcome) -> dict | None:
    """The figures of a run, or None where it was not measured."""
    perf = o.evidence.perf
    single, many = (perf.single, perf.concurrent) if perf else (None, None)
    if single is None or single.decode_tok_s_median is None:
        return None
    return {
        "decode": single.decode_tok_s_median,
        "throughput": many and many.throughput_tok_s,
        "ttft1": single.ttft_s_median,
        "ttftn": many and many.ttft_s_median,
        "n": (many and many.streams) or 16,
        "one": single.streams or 1,
        "tokens": single.max_tokens,
    }


def _device(o: Outcome) -> str:
    gpus = (o.host or {}).get("gpus") or []
    if (o.evidence.perf and o.evidence.perf.device) == "cpu" or not gpus:
        return "CPU"
    names = [str(g).split(",", 1)[0].strip() for g in gpus]
    return f"{len(names)} × {names[0]}" if len(names) > 1 else f"GPU {names[0]}"


def _ratio(value, base) -> str:
    ok = isinstance(value, (int, float)) and isinstance(base, (int, float)) and base
    return f"{value / base:.2f}×" if ok else ""


def _cells(heads: list[str], f: dict, base: dict | None, is_base: bool) -> list[tuple[str, str, str]]:
    def ratio(key: str) -> str:
        return "baseline" if is_base else _ratio(f[key], base and base[key])

    return [
        (heads[0], number(f["decode"], "tok/s"), ratio("decode")),
        (heads[1], number(f["throughput"], "tok/s"), ratio("throughput")),
        (heads[2], number(f["ttft1"], "s"), ""),
        (heads[3], number(f["ttftn"], "s"), ""),
    ]


def tables(results: Results, snippet_id: str, has_spec: bool) -> list[SpeedTable]:
    """One table per build on which the command or one of its variants was measured."""
    out = []
    order = [None, "no-spec", "self-spec", "fix"]
    variants = order + [v for v in results.variants(snippet_id) if v not in order]
    for c in results.columns:
        runs = [(v, o, _figures(o)) for v in variants if (o := results.cell(snippet_id, c, v))]
        measured = [(v, o, f) for v, o, f in runs if f]
        if not measured:
            continue
        base = next((f for v, o, f in measured if v == "no-spec"), None)
        first = measured[0][2]
        heads = [
            f"decode, {first['one']} stream",
            f"throughput, {first['n']} streams",
            f"time to first token, {first['one']} stream",
            f"time to first token, {first['n']} streams",
        ]
        rows = [
            Run(
                VARIANTS.get(v, v),
                v,
                o,
                _cells(heads, f, base, v == "no-spec") if f else [],
                acceptance(o.evidence.perf and o.evidence.perf.spec_decode),
            )
            for v, o, f in runs
        ]
        spec = has_spec or any(r.accepted for r in rows)
        out.append(
            SpeedTable(
                c,
                _device(measured[0][1]),
                first["tokens"] or 256,
                heads,
                rows,
                base is not None,
                spec,
                _sentences(rows, base is not None, has_spec, measured[0][1]),
            )
        )
    return out


def _sentences(rows: list[Run], baseline: bool, has_spec: bool, o: Outcome) -> list[str]:
    said = []
    if baseline:
        said.append(
            "The ratios compare each run with no-spec, the same command without its speculative config, "
            "on the same build: below 1.00× it is slower."
        )
    documented = next((r for r in rows if r.variant is None), None)
    if has_spec and documented and documented.o.stand_in:
        shown = f" (here {documented.accepted.replace(' (', ', ').rstrip(')')})" if documented.accepted else ""
        said.append(
            "The model or its draft is a random-weight stand-in here (same architecture, no real weights): "
            "a draft's tokens are then almost never accepted" + shown + ", so a slowdown with speculative "
            "decoding here says nothing about real models."
        )
    selfspec = next((r for r in rows if r.variant == "self-spec"), None)
    if selfspec and selfspec.accepted:
        said.append(f"self-spec, the model as its own draft, is the acceptance upper bound: {selfspec.accepted}.")
    elif selfspec:
        said.append(
            f"self-spec, the model as its own draft (the acceptance upper bound), was not measured on this "
            f"build: {selfspec.o.verdict} at {selfspec.o.stage} (see Variants)."
        )
    if (o.evidence.perf and o.evidence.perf.device) == "cpu":
        said.append("Measured on a CPU: the figures show that it works under load, not how fast it is on a GPU.")
    return said
