"""The values and keys part of the option history (issue 34), read from real sdists of pinned
releases (the cached ones `test_build.py` uses, plus the few whose boundaries the facts need), and
the ast rules on small sources. Every expected fact was checked by hand in the sdists' sources."""

from __future__ import annotations

import ast

import pytest

from flaghistory.build import build
from flaghistory.literals import strings
from flaghistory.pyindex import Index
from runner.settings import cache_dir

RELEASES = ["0.10.2", "0.11.0", "0.13.0", "0.20.1", "0.32.0", "0.34.0"]
SPEC_0_20_1 = {
    "deepseek_mtp", "mimo_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp", "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp",
    "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp", "qwen3_5_mtp", "longcat_flash_mtp", "mtp",
    "pangu_ultra_moe_mtp", "step3p5_mtp", "hy_v3_mtp",  # MTPModelTypes
    "ngram_gpu", "dflash", "eagle", "eagle3", "extract_hidden_states",  # NgramGPU/DFlash/EagleModelTypes
    "ngram", "medusa", "mlp_speculator", "draft_model", "suffix"}
NEW_IN_0_32_0 = {"dots3_note_mtp", "mimo_v2_mtp", "qwen4_exp_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
                 "bailing_hybrid_mtp", "kimi_k3_mtp", "hy_v4_mtp", "gemma4_mtp", "inkling_mtp", "glm5_next_mtp",
                 "dspark", "custom_class"}


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
    assert "gguf" in _names(history, "--quantization", "0.20.1") and "gguf" not in _names(history, "--quantization",
                                                                                         "0.32.0")


@pytest.mark.network
def test_a_moved_compilation_key_and_when_keys_are_rejected(history):
    keys = history["keys"]["--compilation-config"]
    level = keys["keys"]["level"]
    assert (level["added"], level["removed"], level["deprecated"], level["replacement"]) == (
        "0.10.2", "0.20.1", "0.13.0", "mode")
    assert level["deprecation"].startswith("Level is deprecated")
    assert keys["keys"]["mode"]["added"] == "0.13.0"  # 0.11.0's CompilationConfig has `level` only
    assert any(k.startswith("pass_config.") for k in keys["keys"])  # nested PassConfig as dotted keys
    # 0.10.2: pydantic dataclass, extra ignored; 0.13.0: @dataclass(config=ConfigDict(extra="forbid"))
    assert keys["closed"] == {"added": "0.13.0", "removed": None}
    # SpeculativeConfig: ignored until the release's @config decorator forbids extras
    assert history["keys"]["--speculative-config"]["closed"] == {"added": "0.20.1", "removed": None}


@pytest.mark.network
def test_value_deprecations_in_vllm_words(history):
    reward = history["values"]["--convert"]["values"]["reward"]  # "`--convert reward` is deprecated … use `--convert embed`"
    assert (reward["deprecated"], reward["replacement"], reward["removed"]) == ("0.13.0", "embed", "0.20.1")
    backends = history["values"]["--attention-backend"]
    assert backends["fold"] == "upper" and "FLASH_ATTN" in _names(history, "--attention-backend", "0.34.0")
    assert backends["read"]["added"] == "0.13.0"  # the option exists since 0.13.0
    assert history["values"]["--load-format"]["fold"] == "lower"


# -- the ast rules on small sources ---------------------------------------------------------
SOURCES = {
    "vllm/config/a.py": '''
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
''',
}


def _strings(expression: str):
    index = Index(SOURCES)
    module = index.modules["vllm.config.a"]
    return strings(index, module, ast.parse(expression, mode="eval").body, {})


def test_the_value_rules():
    assert _strings("Outer | None") == ("literal", ["a", "b", "c"])  # nested aliases, typing's flattening
    assert _strings("Union[V0, V1]") == ("literal", ["x", "y"])
    assert _strings("[*TABLE, None]") == ("choices", ["p", "q"])  # a dict's keys; argparse's None left out
    assert _strings("[f.value for f in Fmt]") == ("enum", ["auto", "hf"])
    assert _strings("list(get_args(Outer))") == ("literal", ["a", "b", "c"])
    assert _strings("[8, 16, 32]") is None and _strings("Outer | Fmt") is None  # numbers; two kinds
