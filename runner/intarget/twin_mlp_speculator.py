"""Build an MLP speculator twin (`model_type: mlp_speculator`); run by a *target* env's Python.

    python twin_mlp_speculator.py --family mlp_speculator --out DIR [--model-id ID]
                                     [--config-json FILE] [--tokenizer-from DIR] [--seed S] [--full-size]

An MLP speculator (IBM's `*-accelerator` checkpoints, speculative method `mlp_speculator`) is no
transformers model: vLLM reads its config.json with its own MLPSpeculatorConfig
(vllm/transformers_utils/configs/mlp_speculator.py) and its weights with MLPSpeculator.load_weights
(vllm/model_executor/models/mlp_speculator.py). The twin writes the checkpoint's own keys —
architectures, model_type, n_predict, top_k_tokens_per_head, n_candidates, tie_weights, scale_input —
from the published config when one is given, else MLPSpeculatorConfig's defaults (3 heads, top-k
[5, 4, 3], untied, unscaled), and sizes itself to the target it drafts for, as a published speculator
is: emb_dim = the target twin's hidden size (it reads the target's hidden states), vocab_size = the
target's vocabulary (it proposes the target's tokens); inner_dim 64. Weights are random bf16 in the
layout MLPSpeculator loads (emb.i, proj.i, head.i, ln.i; the stages after the first shared when tied);
the tokenizer is the target twin's.

Imports only torch / safetensors and the standard library: no vLLM (vllm_symbols' rule), no driftmatrix.
"""

import argparse
import json
import shutil
from importlib.metadata import version
from pathlib import Path

ARCHITECTURE = "MLPSpeculatorPreTrainedModel"
# MLPSpeculatorConfig.__init__'s defaults (vLLM 0.20.1 .. 0.32.0)
DEFAULTS = {
    "n_predict": 3,
    "top_k_tokens_per_head": [5, 4, 3],
    "n_candidates": 5,
    "tie_weights": False,
    "scale_input": False,
}
KEPT = tuple(DEFAULTS)  # what the checkpoint decides; the sizes follow the target
INNER = 64
NO_TARGET = {"hidden_size": 64, "vocab_size": 2000}  # the family twins' sizes, when built alone


def target_sizes(tokenizer_from: str | None) -> tuple[int, int, str | None]:
    """(hidden size, vocabulary size, note) of the target twin this speculator drafts for."""
    cfg = {}
    if tokenizer_from and (Path(tokenizer_from) / "config.json").is_file():
        cfg = json.loads((Path(tokenizer_from) / "config.json").read_text())
        cfg = cfg.get("text_config") or cfg
    if not cfg.get("hidden_size") or not cfg.get("vocab_size"):
        return NO_TARGET["hidden_size"], NO_TARGET["vocab_size"], "no target twin: sized as the family twins"
    return cfg["hidden_size"], cfg["vocab_size"], None


def speculator_config(source: dict | None, hidden: int, vocab: int, full: bool) -> tuple[dict, str, list[str]]:
    """(config.json, where its keys came from, notes)."""
    notes = []
    kept = {k: source[k] for k in KEPT if source and k in source}
    if source is None:
        where = "MLPSpeculatorConfig() defaults (n_predict 3), not the published config"
    else:
        where = "config.json"
        notes += [f"{k}: MLPSpeculatorConfig default" for k in KEPT if k not in kept]
    cfg = {
        **DEFAULTS,
        **kept,
        "architectures": [ARCHITECTURE],
        "model_type": "mlp_speculator",
        "emb_dim": hidden,
        "vocab_size": vocab,
        "inner_dim": INNER,
        "torch_dtype": "bfloat16",
    }
    if full and source:
        cfg.update({k: source[k] for k in ("emb_dim", "vocab_size", "inner_dim") if k in source})
    if len(cfg["top_k_tokens_per_head"]) != cfg["n_predict"]:  # MLPSpeculatorConfig asserts it
        notes.append("top_k_tokens_per_head does not have n_predict entries (as given)")
    return cfg, where, notes


def weights(cfg: dict, seed: int) -> dict:
    """The tensors MLPSpeculator.load_weights takes, by name (one copy of each tied stage)."""
    import torch

    torch.manual_seed(seed)
    n, inner = cfg["n_predict"], cfg["inner_dim"] or cfg["emb_dim"]
    stages = range(min(n, 2)) if cfg["tie_weights"] else range(n)

    def rand(*shape):
        return (torch.randn(*shape) * 0.02).to(torch.bfloat16)

    out = {}
    for i in range(1 if cfg["tie_weights"] else n):
        out[f"emb.{i}.weight"] = rand(cfg["vocab_size"], inner)
        out[f"ln.{i}.weight"] = torch.ones(inner, dtype=torch.bfloat16)
        out[f"ln.{i}.bias"] = torch.zeros(inner, dtype=torch.bfloat16)
    for i in stages:
        out[f"proj.{i}.weight"] = rand(inner, cfg["emb_dim"] if i == 0 else inner)
    for i in range(n):
        out[f"head.{i}.weight"] = rand(cfg["vocab_size"], inner)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=["mlp_speculator"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model-id", default="")
    ap.add_argument("--config-json")
    ap.add_argument("--tokenizer-from")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=1, help="ignored: a speculator has heads, not layers")
    ap.add_argument("--tensor-parallel", type=int, default=1, help="ignored: no attention heads to split")
    ap.add_argument("--pipeline-parallel", type=int, default=1, help="ignored: a draft runs in one stage")
    ap.add_argument("--expert-parallel", type=int, default=1, help="ignored: no experts")
    ap.add_argument("--full-size", action="store_true")
    a = ap.parse_args()
    from safetensors.torch import save_file

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    source = json.loads(Path(a.config_json).read_text()) if a.config_json else None
    hidden, vocab, note = target_sizes(a.tokenizer_from)
    cfg, where, notes = speculator_config(source, hidden, vocab, a.full_size)
    notes = ([note] if note else []) + notes + [f"emb_dim {cfg['emb_dim']}, vocab {cfg['vocab_size']}: the target's"]
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    tensors = weights(cfg, a.seed)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    if a.tokenizer_from:  # the target's tokenizer: the speculator proposes its tokens
        for f in Path(a.tokenizer_from).iterdir():
            if "token" in f.name or f.name == "chat_template.jinja":
                shutil.copy(f, out / f.name)
    print(
        json.dumps(
            {
                "dir": str(out),
                "params": sum(t.numel() for t in tensors.values()),
                "architectures": [ARCHITECTURE],
                "model_type": "mlp_speculator",
                "layer_types": None,
                "notes": notes,
                "config_source": where,
                "transformers": version("transformers"),
                "full_size": a.full_size,
            }
        )
    )


if __name__ == "__main__":
    main()
