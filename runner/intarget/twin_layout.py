"""The checkpoint layout of a generic twin: tensors saved the way the published checkpoint has them.

Imports torch, safetensors and transformers inside the function (this module runs in the target env).
"""

from __future__ import annotations

import re


def as_published(out, model, model_type: str) -> list[str]:
    """Tensors saved in the checkpoint orientation the published model has (and vLLM's loader reads).
    transformers 5 keeps some fused expert weights transposed in memory and maps them back on save,
    but a `Transpose(check_dims=True)` compares the tensor with the model's own parameter, which on
    save is the same tensor, so nothing is transposed back (Qwen3-VL-MoE's experts: vLLM 0.32.0
    failed "The size of tensor a (64) must match the size of tensor b (128)"). Transposed here where
    the saved tensor still has the in-memory shape; notes for what was done."""
    import torch
    from safetensors.torch import load_file, save_file
    from transformers.conversion_mapping import get_checkpoint_conversion_mapping
    from transformers.core_model_loading import Transpose

    turns = []
    for conv in get_checkpoint_conversion_mapping(model_type) or []:
        ops = getattr(conv, "operations", [])
        if (
            len(ops) == 1
            and isinstance(ops[0], Transpose)
            and ops[0].check_dims
            and list(conv.source_patterns) == list(conv.target_patterns)
        ):
            turns += [(re.compile(re.escape(p).replace(r"\*", r"[^.]+")), ops[0]) for p in conv.source_patterns]
    files = sorted(out.glob("*.safetensors"))
    if not turns or not files:
        return []
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    done = set()
    for path in files:
        tensors = load_file(path)
        for key, tensor in tensors.items():
            op = next((op for pattern, op in turns if pattern.search(key)), None)
            if op is not None and shapes.get(key) == tuple(tensor.shape):
                tensors[key] = torch.transpose(tensor, op.dim0, op.dim1).contiguous()
                done.add(re.sub(r"\.\d+\.", ".N.", key))
        save_file(tensors, path, metadata={"format": "pt"})
    return [f"saved as published (transposed): {', '.join(sorted(done))}"] if done else []
