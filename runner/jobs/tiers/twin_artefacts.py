"""Failures that belong to a twin, not to the documented command.

A twin is ours: its config.json (from a configuration class's defaults when the published one
cannot be had), its trained tokenizer, its missing processor files and its random weights. When
the exception that stopped a twin's job was raised where vLLM loads one of those, the result says
nothing about the docs, so the job SKIPs with the reason (the exception kept as evidence) and the
twin is recorded as not counting. A failure anywhere else (an option's validation, a feature
check, an engine start-up path) is the command's, twin or not: that is what twins are for.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from driftmatrix.runner.outcomes.evidence_record import RaisedException, TwinNote

if TYPE_CHECKING:  # state.fail() asks `reason` first: no import cycle at run time
    from driftmatrix.runner.jobs.tiers.state import JobState

# (what was being loaded, where the raising frame sits, whether only a family-defaults config counts)
LOADERS = (
    (
        "configuration",
        (
            "vllm/transformers_utils/config",
            "vllm/transformers_utils/configs/",
            "transformers/configuration_utils",
            "/configuration_",
        ),
        True,
    ),
    (
        "processor",
        (
            "vllm/transformers_utils/processor",
            "transformers/processing_utils",
            "/processing_",
            "transformers/image_processing",
            "/image_processing_",
            "feature_extraction",
            "vllm/multimodal/processing/",
        ),
        False,
    ),
    (
        "tokenizer",
        ("vllm/tokenizers/", "vllm/transformers_utils/tokenizer", "transformers/tokenization_", "/tokenization_"),
        False,
    ),
    ("weights", ("vllm/model_executor/model_loader/", "load_weights"), False),
)
# a twin's checkpoint naming a parameter the model does not have, wherever vLLM says so (MiniMax-M2's
# loader raises it from its own frame): the checkpoint is ours
WEIGHT_LAYOUT = re.compile(r"There is no module or parameter named")
# vLLM complaining about what a twin's tokenizer holds (trained here, not the family's own): a reasoning
# or tool-call parser missing its markers, a model that wants its publisher's tokenizer format
TOKENIZER_CONTENT = re.compile(
    r"(?i)could not locate .* in the tokenizer|tokenizer did not include|"
    r"requires `--tokenizer-mode|not (found|present) in the tokenizer|"
    r"token id \d+ is out of vocabulary|"
    # a parser that reads its markers from the published tokenizer_config
    # (`Parsing with a response template requires ...`, 0.34.0)
    r"metadata in the tokenizer configuration"
)
# a shrunk size the command's parallelism cannot split (where the builder could not fit it: linear
# attention groups, Mamba groups, experts)
SHRUNK_SIZES = re.compile(
    r"(?i)must be divisible by (the )?(tensor|pipeline|expert)[ _-]parallel"
    # tensors of the twin's shrunk shapes meeting a size it did not shrink (a
    # vision patch grid, a kernel's fixed head size, a published weight width)
    r"|is invalid for input of size|exceeds dimension size|Error during index put"
    r"|size mismatch|must match the size of tensor|mla_dimensions="
    r"|is greater than the number of experts"
    # a drafter's per-layer configs against the twin's shrunk (MTP) layer count
    r"|per-layer configs for a model with \d+ layers"
    # a per-layer list against the twin's shrunk layer count (HY V4's
    # indexer_types, MuseGlimmer's vision layer_types)
    r"|one entry per hidden layer|layer_types must match num_hidden_layers"
)
# a config built from class defaults lacks what the published one sets (its context length, a
# drafter's special token ids)
DEFAULTS_CONFIG = re.compile(
    r"(?i)greater than the derived max_model_len|model config must specify"
    # vLLM's check of the text config it extracts (UnlimitedOCR's class defaults
    # carry no text sizes): "does not have `num_attention_heads` attribute"
    r"|config extracted from the model config does not have"
    # vLLM could not inspect the model class with such a config (DeepSeek-V4-
    # Vision's class defaults hold no text sizes), so it finds no generate runner
    r"|does not support `--runner generate`"
)
# a model class asserting, or reading, what its published config sets and the class defaults leave
# unset, while the model is built (vLLM's Step3p5 model: `assert config.max_position_embeddings is not None`;
# its HYV3 model: `ValueError: first_k_dense_replace not exist,please check config`)
DEFAULTS_MODEL = ("AssertionError", "AttributeError", "TypeError", "KeyError")
DEFAULTS_MODEL_SAYS = re.compile(r"(?i)\bconfig\b")  # any other exception must name the config
MODEL_BUILT = re.compile(r"vllm/model_executor/models/[^\s\"]+\.py.*\b__init__\b")
# a special token the twin's trained tokenizer has not (KeyError: '<|end|>')
MISSING_TOKEN = re.compile(r"^'?<[^'\s]{1,40}>'?$")
# the model's quantization: twins are bf16 and never carry the published quantization_config
# (runner/intarget/twin_generic.py), so vLLM's check of it says nothing about the command
QUANTIZATION = re.compile(r"(?i)cannot find the config file for \w+|quantization_config|quant(ization)? config")
# the environment, not the twin: an optional package missing is said by its own signature
NOT_THE_TWIN = ("ImportError", "ModuleNotFoundError")
FRAMES = 3
"""The innermost frames looked at: where the exception was raised, not what called it."""


def _frames(trace: str) -> list[str]:
    return [line.strip().replace("\\", "/") for line in trace.splitlines() if line.lstrip().startswith("File ")]


def reason(
    twins: list[TwinNote], stage: str, exc: RaisedException | None, version: str, frames: str | None = None
) -> str | None:
    """The reason to SKIP when `exc` was raised while vLLM loaded a part of the served twin among an
    outcome's `evidence.twins` (then marked as not counting), else None. `frames`: the raising
    traceback's `File …` lines, when `exc` carries no traceback of its own (a server's log)."""
    twin = next((t for t in twins if t.served), None)
    if not twin or not exc or stage not in ("config", "start", "probe") or exc.type in NOT_THE_TWIN:
        return None
    raised_in = (exc.location.file if exc.location else None) or ""  # the innermost frame, when no traceback came
    inner = _frames(frames or exc.traceback or "")[-FRAMES:] + ([raised_in] if raised_in else [])
    defaults = not (twin.config_source or "").startswith("config.json")  # not the published one
    part = next(
        (
            name
            for name, places, defaults_only in LOADERS
            if (defaults or not defaults_only) and any(p in line for line in inner for p in places)
        ),
        None,
    )
    message = exc.message or ""
    if part is None and (
        TOKENIZER_CONTENT.search(message) or (exc.type == "KeyError" and MISSING_TOKEN.match(message.strip()))
    ):
        part = "tokenizer's special tokens"
    if part is None and defaults and DEFAULTS_CONFIG.search(message):
        part = "configuration (class defaults)"
    if (
        part is None
        and defaults
        and _model_init(exc, inner)
        and (exc.type in DEFAULTS_MODEL or DEFAULTS_MODEL_SAYS.search(message))
    ):
        part = "configuration (class defaults) as it builds the model"
    if part is None and WEIGHT_LAYOUT.search(message):
        part = "weights"
    if part is None and SHRUNK_SIZES.search(message):
        part = "shrunk sizes"
    if part is None and QUANTIZATION.search(message):
        part = "quantization config (twins are bf16: the published one is not reproduced)"
    if part is None:
        return None
    twin.counts = False
    where = exc.location
    first = exc.message.strip().splitlines()[0][:200] if exc.message else ""
    built = "built from its configuration class's defaults" if defaults else "a twin"
    return (
        f"the stand-in for {twin.model} ({built}) "
        f"fails where vLLM {version} loads its {part}: {exc.type}: {first} "
        f"[{where and where.file}:{where and where.line}]; a twin artefact, not a finding about the docs"
    )


def _model_init(exc: RaisedException, inner: list[str]) -> bool:
    """Raised in a vLLM model class's constructor (where it reads its config)."""
    loc = exc.location
    if loc is not None and not isinstance(loc, str):
        return (loc.file or "").startswith("vllm/model_executor/models/") and loc.function == "__init__"
    return any(MODEL_BUILT.search(line) for line in inner[-1:])


def resolved_mismatch(state: JobState) -> str | None:
    """A twin counts only if the target resolves the same architecture as the published model would:
    recorded for the served twin; the reason to SKIP when it does not (it would check another model)."""
    resolved = state.outcome.evidence.effective_config.get("resolved_architecture")
    for twin in state.outcome.evidence.twins:
        if not twin.served:
            continue  # a draft's architecture is resolved inside the speculative config
        published = twin.published_architecture
        twin.resolved_architecture = resolved
        twin.counts = None if not (published and resolved) else resolved == published
        twin.keep_none("resolved_architecture", "counts")  # written even when unknown
        if twin.counts is False:
            return (
                f"the stand-in for {twin.model} resolves to {resolved} in vLLM {state.job.target.version}, "
                f"the published model to {published}: it would check another model"
            )
    return None
