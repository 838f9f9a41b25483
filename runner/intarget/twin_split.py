"""The one rule that fits a twin to its command (runner/argv/shape.py twin_shape): its parallel split (tensor,
pipeline, expert parallel sizes) and, for a twin from class defaults, its context length: run inside a target env by twin_build.py, next to twin_generic.py, whose tables of
config keys it reads. Standard library only."""

from __future__ import annotations

import os
import sys

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

from . import twin_generic as g


def fit_parallel(cfg: dict, split: dict, notes: list[str]) -> None:
    """The one rule that fits a shrunk twin to the parallel sizes its command asks for, so the twin
    fails a split only where the published model would: vLLM requires attention heads (and linear-
    attention / Mamba heads) divisible by the tensor parallel size and KV heads dividing it or
    divisible by it; a pipeline stage per rank needs a layer; expert parallel needs an expert per rank
    (vLLM places num_experts / EP size on each). A twin (4 heads, 2 layers, 4 experts) would otherwise
    fail `-tp 8`, `-pp 4` or `-tp 8 --enable-expert-parallel` for a reason the published model does
    not have. Applied to the decoder config and every text sub-config."""
    tp, pp, ep = (max(int(split.get(k) or 1), 1) for k in ("tp", "pp", "ep"))
    for sub in [cfg, *(s for _, s, role in g.sub_configs(cfg, "text") if role == "text")]:
        if tp > 1:
            _fit_heads(sub, tp, notes)
        if pp > 1:
            _fit_stages(sub, pp, notes)
        if ep > 1 or tp > 1:
            _fit_experts(sub, ep, tp, notes)


def _up_to(n: int, k: int) -> int:
    """The least multiple of k not below n."""
    return k * -(-n // k)


def _fit_heads(sub: dict, tp: int, notes: list[str]) -> None:
    key = next((k for k in g.HEADS if g.is_count(sub.get(k))), None)
    if key is None:
        return
    old = sub[key]
    new = _up_to(old, tp)
    if new != old:
        if not g.is_count(sub.get("head_dim")) and g.is_count(sub.get("hidden_size")):
            sub["hidden_size"] = new * (sub["hidden_size"] // old)  # the head width stays
        sub[key] = new
        notes.append(f"{key} {old} -> {new}: divisible by the command's tensor parallel size {tp}")
    for kv in g.KV_HEADS:
        n = sub.get(kv)
        if g.is_count(n) and n % tp and tp % n:
            sub[kv] = new if n == old else tp  # plain multi-head stays plain
    for k in ("linear_num_key_heads", "linear_num_value_heads", "mamba_num_heads", "mamba_n_heads"):
        if g.is_count(sub.get(k)) and sub[k] % tp:
            sub[k] = _up_to(sub[k], tp)


def _fit_stages(sub: dict, pp: int, notes: list[str]) -> None:
    """At least one layer per pipeline stage: the kept layers' pattern repeated."""
    count_key, n = g.layer_count(sub)
    if not count_key or not n or n >= pp:
        return
    per_layer = g.per_layer_keys(sub, n)
    order = [i % n for i in range(pp)]
    for k in per_layer:
        sub[k] = "".join(sub[k][i] for i in order) if isinstance(sub[k], str) else [sub[k][i] for i in order]
    for k in [k for k in g.INDEX_LISTS if isinstance(sub.get(k), list)]:
        kept = set(sub[k])
        sub[k] = [j for j, i in enumerate(order) if i in kept]
    sub[count_key] = pp
    notes.append(f"{count_key} {n} -> {pp}: a layer per stage of the command's pipeline parallel size {pp}")


def _fit_experts(sub: dict, ep: int, tp: int, notes: list[str]) -> None:
    """Experts a multiple of the expert parallel size (each rank holds as many), and no fewer than the
    tensor parallel size (vLLM's older MoE blocks refuse "Tensor parallel size 8 is greater than the
    number of experts 4"; the published models have dozens); top-k unchanged."""
    for k in g.EXPERTS:
        if g.is_count(sub.get(k)) and (sub[k] % ep or sub[k] < tp):
            old, sub[k] = sub[k], _up_to(max(sub[k], tp), ep)
            why = f"expert parallel size {ep}" if ep > 1 else f"tensor parallel size {tp}"
            notes.append(f"{k} {old} -> {sub[k]}: enough for the command's {why}")


def fit_context(cfg: dict, context: int | None, notes: list[str]) -> None:
    """A twin built from a configuration class's defaults (no published config.json here) is given
    the context length its command asks for (`--max-model-len`): the class's default (Qwen3.5's
    32,768) is not the published model's (262,144), and vLLM refuses a longer one ("greater than the
    derived max_model_len") for a reason the published model does not have. A twin from the
    published config keeps its context: a command asking beyond it is a finding."""
    if not context:
        return
    for sub in [cfg, *(s for _, s, role in g.sub_configs(cfg, "text") if role == "text")]:
        for k in ("max_position_embeddings", *g.CONTEXT):
            if g.is_count(sub.get(k)) and sub[k] < context:
                notes.append(f"{k} {sub[k]} -> {context}: the command's context length (class defaults)")
                sub[k] = context
