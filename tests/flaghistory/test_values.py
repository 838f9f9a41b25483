"""The values and keys part of the option history (issue 34), read from real sdists of pinned
releases (the cached ones `test_build.py` uses, plus the few whose boundaries the facts need), and
the ast rules on small sources. Every expected fact was checked by hand in the sdists' sources."""

from __future__ import annotations

import ast
import json

import pytest

from driftmatrix.flaghistory.build import build
from driftmatrix.flaghistory.history import SHIPPED, FlagHistory
from driftmatrix.flaghistory.literals import strings
from driftmatrix.flaghistory.pyindex import Index
from driftmatrix.flaghistory.uses import Use, uses_of
from driftmatrix.runner.settings import cache_dir

RELEASES = ["0.10.2", "0.11.0", "0.12.0", "0.13.0", "0.20.1", "0.32.0", "0.34.0"]
SPEC_0_20_1 = {
    "deepseek_mtp",
    "mimo_mtp",
    "glm4_moe_mtp",
    "glm4_moe_lite_mtp",
    "glm_ocr_mtp",
    "ernie_mtp",
    "nemotron_h_mtp",
    "exaone_moe_mtp",
    "exaone4_5_mtp",
    "qwen3_next_mtp",
    "qwen3_5_mtp",
    "longcat_flash_mtp",
    "mtp",
    "pangu_ultra_moe_mtp",
    "step3p5_mtp",
    "hy_v3_mtp",  # MTPModelTypes
    "ngram_gpu",
    "dflash",
    "eagle",
    "eagle3",
    "extract_hidden_states",  # NgramGPU/DFlash/EagleModelTypes
    "ngram",
    "medusa",
    "mlp_speculator",
    "draft_model",
    "suffix",
}
NEW_IN_0_32_0 = {
    "dots3_note_mtp",
    "mimo_v2_mtp",
    "qwen4_exp_mtp",
    "bailing_hybrid_v3_mtp",
    "minimax_m3_mtp",
    "bailing_hybrid_mtp",
    "kimi_k3_mtp",
    "hy_v4_mtp",
    "gemma4_mtp",
    "inkling_mtp",
    "glm5_next_mtp",
    "dspark",
    "custom_class",
}


@pytest.fixture(scope="module")
def history() -> dict:
    return build(cache_dir() / "flag-history", only=RELEASES)


def _has(record: dict, release: str, releases: list[str]) -> bool:
    """Whether a span holds `release` (added ≤ release < removed, outside its gaps)."""
    i = releases.index(release)
    end = releases.index(record["removed"]) if record["removed"] else len(releases)
    gaps = any(releases.index(a) <= i <= releases.index(b) for a, b in record.get("gaps", []))
    return releases.index(record["added"]) <= i < end and not gaps


def _names(history: dict, option: str, release: str) -> set[str]:
    domain = history["values"][option]
    assert _has(domain["read"], release, history["releases"])
    return {n for n, span in domain["values"].items() if _has(span, release, history["releases"])}


@pytest.mark.network
def test_tool_parsers_from_both_registry_layouts(history):
    domain = history["values"]["--tool-call-parser"]
    assert domain["read"] == {"added": "0.10.2", "removed": None}
    # qwen3_xml: registered first by 0.11.0's vllm/entrypoints/openai/tool_parsers/qwen3xml_tool_parser.py
    # (`@ToolParserManager.register_module("qwen3_xml")`); 0.10.2 has no such parser
    assert domain["values"]["qwen3_xml"] == {"added": "0.11.0", "removed": None}
    assert "hermes" in _names(history, "--tool-call-parser", "0.10.2")  # decorators (old layout)
    assert "hermes" in _names(history, "--tool-call-parser", "0.34.0")  # _TOOL_PARSERS_TO_REGISTER (new)
    assert (domain["from"], domain["where"]) == ("registry", "vllm/tool_parsers/__init__.py")
    assert domain["open_with"] == ["--tool-parser-plugin"] and "chat template" in domain["model_dependent"]
    assert len(_names(history, "--tool-call-parser", "0.20.1")) == 37  # the table's 37 entries


@pytest.mark.network
def test_speculative_methods_of_two_releases(history):
    assert _names(history, "--speculative-config.method", "0.20.1") == SPEC_0_20_1
    assert _names(history, "--speculative-config.method", "0.32.0") == SPEC_0_20_1 | NEW_IN_0_32_0
    domain = history["values"]["--speculative-config.method"]
    assert (domain["from"], domain["where"]) == ("literal", "vllm/config/speculative.py")
    assert domain["model_dependent"]


@pytest.mark.network
def test_a_deprecated_then_removed_quantization_method(history):
    # fp_quant: in DEPRECATED_QUANTIZATION_METHODS of 0.20.1 and 0.32.0, gone from 0.34.0's QuantizationMethods
    record = history["values"]["--quantization"]["values"]["fp_quant"]
    assert (record["deprecated"], record["removed"], record["replacement"]) == ("0.20.1", "0.34.0", None)
    assert record["deprecation"].startswith("The quantization method %s is deprecated")
    assert "gguf" in _names(history, "--quantization", "0.20.1") and "gguf" not in _names(
        history, "--quantization", "0.32.0"
    )


@pytest.mark.network
def test_a_moved_compilation_key_and_when_keys_are_rejected(history):
    keys = history["keys"]["--compilation-config"]
    level = keys["keys"]["level"]
    assert (level["added"], level["removed"], level["deprecated"], level["replacement"]) == (
        "0.10.2",
        "0.20.1",
        "0.12.0",
        "mode",
    )
    assert level["deprecation"].startswith("Level is deprecated")
    assert keys["keys"]["mode"]["added"] == "0.12.0"  # 0.11.0's CompilationConfig has `level` only
    # PassConfig's renamed flags (0.12.0: "Deprecated in: v0.12.0. Use fuse_norm_quant and fuse_act_quant instead.")
    fusion = keys["keys"]["pass_config.enable_fusion"]
    assert (fusion["deprecated"], fusion["replacement"], fusion["removed"]) == (
        "0.12.0",
        "pass_config.fuse_norm_quant",
        "0.13.0",
    )
    assert any(k.startswith("pass_config.") for k in keys["keys"])  # nested PassConfig as dotted keys
    # 0.10.2: pydantic dataclass, extra ignored; 0.13.0: @dataclass(config=ConfigDict(extra="forbid"))
    assert keys["closed"] == {"added": "0.13.0", "removed": None}
    # SpeculativeConfig: ignored until the release's @config decorator forbids extras
    assert history["keys"]["--speculative-config"]["closed"] == {"added": "0.20.1", "removed": None}


@pytest.mark.network
def test_value_deprecations_in_vllm_words(history):
    reward = history["values"]["--convert"]["values"][
        "reward"
    ]  # "`--convert reward` is deprecated … use `--convert embed`"
    assert (reward["deprecated"], reward["replacement"], reward["removed"]) == ("0.13.0", "embed", "0.20.1")
    backends = history["values"]["--attention-backend"]
    assert backends["fold"] == "upper" and "FLASH_ATTN" in _names(history, "--attention-backend", "0.34.0")
    executors = history["values"]["--distributed-executor-backend"]  # also a class path: open
    assert _names(history, "--distributed-executor-backend", "0.34.0") == {"ray", "mp", "uni", "external_launcher"}
    assert executors["open"]["type"] == "str | DistributedExecutorBackend | type[Executor] | None"
    assert "open" not in history["values"]["--quantization"]  # checked against its list at start
    assert backends["read"]["added"] == "0.13.0"  # the option exists since 0.13.0
    assert history["values"]["--load-format"]["fold"] == "lower"


@pytest.mark.network
def test_tokenizer_modes_are_the_literal_and_the_registry(history):
    # 0.20.1: TokenizerMode = Literal["auto", "hf", "slow", "mistral", "deepseek_v32", "deepseek_v4"] and
    # vllm/tokenizers/registry.py's _VLLM_TOKENIZERS adds grok2, kimi_audio, qwen_vl
    assert _names(history, "--tokenizer-mode", "0.20.1") == {
        "auto",
        "hf",
        "slow",
        "mistral",
        "deepseek_v32",
        "deepseek_v4",
        "grok2",
        "kimi_audio",
        "qwen_vl",
    }
    # 0.32.0: the table adds deepseek_v41 (new) and kimi_audio; auto is the Literal's only; grok2, qwen_vl are gone
    modes = _names(history, "--tokenizer-mode", "0.32.0")
    assert {"deepseek_v41", "kimi_audio", "auto"} <= modes and not {"grok2", "qwen_vl"} & modes
    assert history["values"]["--tokenizer-mode"]["values"]["deepseek_v41"]["added"] == "0.32.0"
    domain = history["values"]["--tokenizer-mode"]
    assert (domain["from"], domain["where"]) == ("registry", "vllm/tokenizers/registry.py")
    mode = Use("value", "--tokenizer-mode", "--tokenizer-mode", "deepseek_v41")
    assert FlagHistory(history).accepts_use(mode, "0.32.0") is True  # was None: open, the Literal lacks it


@pytest.mark.network
def test_weight_transfer_backends_from_the_engine_factory(history):
    # 0.32.0's factory.py: WeightTransferEngineFactory.register_engine("modelexpress", …) beside the
    # Literal["nccl", "ipc", "sparse_nccl", "sharded_rdt", "nccl_m2n"]; the trainer factory's calls do not count
    names = _names(history, "--weight-transfer-config.backend", "0.32.0")
    assert names == {"nccl", "ipc", "sparse_nccl", "sharded_rdt", "nccl_m2n", "modelexpress"}
    assert history["values"]["--weight-transfer-config.backend"]["values"]["modelexpress"]["added"] == "0.32.0"
    assert _names(history, "--weight-transfer-config.backend", "0.20.1") == {"nccl", "ipc"}


@pytest.mark.network
def test_a_choice_the_serve_parser_removes(history):
    # 0.32.0's arg_utils.py: parallel_kwargs["all2all_backend"]["choices"].remove(PASSTHROUGH_ALL2ALL_BACKEND)
    # before add_argument("--all2all-backend", **parallel_kwargs["all2all_backend"]): the Literal has it, argparse not
    names = _names(history, "--all2all-backend", "0.32.0")
    assert "passthrough" not in names and {"naive", "deepep_low_latency"} <= names


@pytest.mark.network
def test_short_aliases_are_judged_as_their_long_option(history):
    aliases = history["aliases"]  # 0.34.0's add_argument("--compilation-config", "-cc", …)
    assert (aliases["-cc"], aliases["-ac"], aliases["-q"], aliases["-tp"]) == (
        "--compilation-config",
        "--attention-config",
        "--quantization",
        "--tensor-parallel-size",
    )
    flags = FlagHistory(history)
    uses = uses_of(flags, ["vllm", "serve", "m", "-cc", '{"mode": 3, "bogus_key": 1}', "-q", "fp9"])
    assert Use("key", "--compilation-config", "-cc", key="mode") in uses
    assert flags.accepts_use(Use("key", "--compilation-config", "-cc", key="bogus_key"), "0.32.0") is False
    assert flags.accepts_use(Use("value", "--quantization", "-q", value="fp9"), "0.32.0") is False
    assert Use("option", "--compilation-config", "-cc") in uses and flags.accepts("-cc", "0.32.0")


@pytest.mark.network
def test_nested_configs_typed_optional(history):
    def keys(option):
        spans = history["keys"][option]["keys"]
        return {k for k, span in spans.items() if _has(span, "0.32.0", history["releases"])}

    # `linear: QuantSpec | None`, `hisparse_config: HiSparseConfig | None`, `draft_load_config: LoadConfig | None`
    assert {"linear.weight", "linear.activation", "moe.weight"} <= keys("--quantization-config")
    assert {"hisparse_config.device_buffer_size", "hisparse_config.eager_host_mirror"} <= keys("--attention-config")
    assert {"draft_load_config.load_format", "draft_load_config.download_dir"} <= keys("--speculative-config")
    flags = FlagHistory(history)
    # QuantKeyField (Annotated[QuantKey | None, plain validator]: a name string) and
    # SkipValidation[ModelConfig] (filled by vLLM) have nothing below them: nothing under them is judged
    assert not flags.has_nested_keys("--quantization-config", "linear.weight")
    assert not flags.has_nested_keys("--speculative-config", "draft_model_config")
    inner = uses_of(flags, ["vllm", "serve", "m", "--speculative-config", '{"draft_model_config": {"x": 1}}'])
    assert [u.key for u in inner if u.kind == "key"] == ["draft_model_config"]


def test_the_shipped_values_and_keys_follow_the_schema():
    data = json.loads(SHIPPED.read_text())
    releases = data["releases"]
    spans = []
    for option, domain in data["values"].items():
        assert option.startswith("--") and domain["from"] in ("choices", "literal", "enum", "registry"), option
        assert {"domain", "where", "read", "open_with", "model_dependent", "values"} <= set(domain) and domain["values"]
        assert all(o in data["flags"] for o in domain["open_with"]) and domain.get("fold") in (None, "lower", "upper")
        assert domain.get("open") is None or "str" in domain["open"]["type"]  # `Literal | str`: other names accepted
        spans += [domain["open"]] if domain.get("open") else []
        spans += [domain["read"], *domain["values"].values()]
    assert data["aliases"]["-cc"] == "--compilation-config"
    assert all(a in data["flags"] and not a.startswith("--") and o in data["flags"] for a, o in data["aliases"].items())
    for option, keys in data["keys"].items():
        assert option in data["flags"] and keys["keys"] and keys["class"][0].isupper(), option
        spans += [keys["read"], *keys["keys"].values(), *([keys["closed"]] if keys["closed"] else [])]
    for span in spans:
        assert span["added"] in releases and span["removed"] in (None, *releases)
        assert ("deprecated" in span) == ("deprecation" in span) == ("replacement" in span)
    # the domains issue 34 names, each read up to the newest release
    for option in (
        "--tool-call-parser",
        "--reasoning-parser",
        "--quantization",
        "--load-format",
        "--speculative-config.method",
        "--attention-backend",
        "--distributed-executor-backend",
    ):
        assert data["values"][option]["read"]["removed"] is None, option


def test_an_open_domain_never_rejects_an_unknown_name():
    history = FlagHistory.load(SHIPPED)
    executor = Use("value", "--distributed-executor-backend", "--distributed-executor-backend", "my_pkg.MyExecutor")
    assert history.accepts_use(executor, "0.34.0") is None  # `str | DistributedExecutorBackend | type[Executor]`
    assert (
        history.accepts_use(
            Use("value", "--distributed-executor-backend", "--distributed-executor-backend", "mp"), "0.34.0"
        )
        is True
    )
    assert history.accepts_use(Use("value", "--quantization", "--quantization", "fp9"), "0.34.0") is False
    # --kv-cache-dtype: `CacheDType` in 0.32.0 (argparse's choices), `CacheDType | str` from 0.33.0
    assert history.values["--kv-cache-dtype"]["open"] == {
        "added": "0.33.0",
        "removed": None,
        "type": "CacheDType | str",
    }
    dtype = Use("value", "--kv-cache-dtype", "--kv-cache-dtype", "octave_k9")
    assert history.accepts_use(dtype, "0.32.0") is False and history.accepts_use(dtype, "0.34.0") is None


# -- the ast rules on small sources ---------------------------------------------------------
SOURCES = {
    "vllm/config/a.py": """
from enum import Enum
from typing import Literal, Union
Inner = Literal["b", "c"]
Outer = Literal["a", Inner]
V0 = Literal["x"]
V1 = Literal["y"]
TABLE = {"p": 1, "q": 2}
class Fmt(str, Enum):
    AUTO = "auto"
    HF = "hf"
""",
}


def value_of(expression: str):
    index = Index(SOURCES)
    module = index.modules["vllm.config.a"]
    return strings(index, module, ast.parse(expression, mode="eval").body, {})


def test_the_value_rules():
    assert value_of("Outer | None") == ("literal", ["a", "b", "c"])  # nested aliases, typing's flattening
    assert value_of("Union[V0, V1]") == ("literal", ["x", "y"])
    assert value_of("[*TABLE, None]") == ("choices", ["p", "q"])  # a dict's keys; argparse's None left out
    assert value_of("[f.value for f in Fmt]") == ("enum", ["auto", "hf"])
    assert value_of("list(get_args(Outer))") == ("literal", ["a", "b", "c"])
    assert value_of("[8, 16, 32]") is None and value_of("Outer | Fmt") is None  # numbers; two kinds
