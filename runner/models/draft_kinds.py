"""What a speculative draft's checkpoint is, and whether a twin can be of that type (issue 32).

A twin decides a verdict only when its architecture and model type are the checkpoint's. For a
served model and an ordinary draft model, offline, the supported-models table or the model id's
family names a plausible architecture (runner/models/twins.plan). A draft that is a speculative *head*
is another kind of checkpoint: an MLP speculator, an EAGLE / EAGLE-3 head, Medusa heads, a DFlash
or DSpark drafter, an MTP head. Its id often names its target (`ibm-ai-platform/llama3-8b-accelerator`,
`RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3`), and a twin of that target's family makes vLLM
refuse the method ("Unsupported speculative method: 'mlp_speculator'") or build another drafter: a
false doc-drift. So a head gets a twin only from its published config (model map, hub) or from a
builder of its own kind; otherwise the job SKIPs with the reason.

The kind comes from the docs' speculative config as vLLM reads it (vllm/config/speculative.py):
its `method`, else vLLM's own detection from the draft's id (`eagle-`, `eagle3`, `dflash`); a draft
with neither is an ordinary model unless its id names a speculative head.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """A kind of draft checkpoint."""

    what: str
    """In words, for a reason: `an MLP speculator`."""
    families: frozenset[str] = frozenset()
    """Twin builder families whose twins are checkpoints of this kind (runner/models/twins.py)."""
    builder: str | None = None
    """The family that builds any checkpoint of this kind offline, from the method alone."""
    architecture: str | None = None
    """The architecture the kind's published checkpoints name, when it is one."""


MTP = Kind("an MTP head", frozenset({"gemma4_assistant"}))  # Gemma 4's assistant is its MTP drafter
KINDS = {
    # vLLM's MLPSpeculatorConfig keys: the checkpoint is fully described by its method and its target
    "mlp_speculator": Kind(
        "an MLP speculator", frozenset({"mlp_speculator"}), "mlp_speculator", "MLPSpeculatorPreTrainedModel"
    ),
    "medusa": Kind("Medusa heads", architecture="MedusaModel"),
    "eagle": Kind("an EAGLE head"),
    "eagle3": Kind("an EAGLE-3 head"),
    "dflash": Kind("a DFlash drafter"),
    "dspark": Kind("a DSpark drafter"),
    "mtp": MTP,
}
# vLLM's detection from the id when no head method is given (vllm/config/speculative.py, in its order)
ID_METHODS = (("eagle-", "eagle"), ("eagle3", "eagle3"), ("dflash", "dflash"))
# an id naming a speculative head whose kind vLLM reads from its config (model_type), not from the id
HEAD_ID = re.compile(r"(?i)accelerator|speculator|medusa|eagle|dflash|dspark|([-_.]|^|/)mtp([-_.]|$)")
UNKNOWN_HEAD = Kind("a speculative head (its id says so; vLLM reads which kind from its config)")


@dataclass(frozen=True)
class Draft:
    """A model named as the draft of a speculative config."""

    method: str | None
    """The speculative config's `method` as the docs give it."""
    served: str
    """The served model's id: an MTP method's draft may be the served checkpoint itself."""

    def kind(self, model_id: str) -> Kind | None:
        """The checkpoint's kind when it is a speculative head; None for an ordinary draft model
        (or the served checkpoint itself, whose MTP layers an MTP method uses)."""
        if model_id == self.served:
            return None
        method = self.method if isinstance(self.method, str) else None
        if method in KINDS:
            return KINDS[method]
        if method and method.endswith("_mtp"):  # ernie_mtp, qwen3_5_mtp, ...: read as mtp by vLLM
            return MTP
        low = model_id.lower()
        detected = next((m for word, m in ID_METHODS if word in low), None)
        if detected:
            return KINDS[detected]
        return UNKNOWN_HEAD if HEAD_ID.search(model_id) else None


def of(speculative_config, served: str) -> Draft:
    spec = speculative_config if isinstance(speculative_config, dict) else {}
    method = spec.get("method")
    return Draft(method if isinstance(method, str) else None, served)


def wrong_type(draft: Draft | None, model_id: str, family: str, source: str) -> str | None:
    """Why a twin planned offline for MODEL_ID (builder FAMILY; SOURCE: where its architecture came
    from, in words) would not be of the checkpoint's type; None when it is (a served model, an
    ordinary draft, a builder of the head's own kind). A published config is always the checkpoint's."""
    kind = draft.kind(model_id) if draft else None
    if kind is None or family in kind.families:
        return None
    method = f"speculative method {draft.method!r}" if draft.method else "a speculative config without a method"
    return (
        f"{model_id} is {kind.what} ({method}); offline the only architecture here is {source}, "
        f"another model type, so its twin would not be the checkpoint's and no verdict would be about the docs"
    )
