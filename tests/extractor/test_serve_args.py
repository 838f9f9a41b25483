import pytest

from driftmatrix.extractor.serve_args import parse_serve_args, placeholders_in


def test_model_positional_or_flag():
    assert parse_serve_args(["m", "--port", "1"]).model == "m"
    assert parse_serve_args(["--port", "1", "--model", "m"]).model == "m"
    assert parse_serve_args(["--model=m"]).model == "m"
    assert parse_serve_args(["--enforce-eager"]).model is None


@pytest.mark.parametrize(
    "argv",
    [
        ["m", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}'],
        ["m", "--speculative_config", '{"method":"ngram","num_speculative_tokens":3}'],
        ["m", "-sc", '{"num_speculative_tokens": 3, "method": "ngram"}'],
        ["m", '--speculative-config={"method": "ngram", "num_speculative_tokens": 3}'],
        ["m", "--speculative-config.method", "ngram", "--speculative-config.num_speculative_tokens", "3"],
        ["m", "--speculative_config.method=ngram", "-sc.num_speculative_tokens", "3"],
    ],
)
def test_speculative_config_spellings(argv):
    spec = parse_serve_args(argv).speculative_config
    assert spec["method"] == "ngram" and spec["num_speculative_tokens"] == 3


def test_dotted_keys_nest_append_and_replace_the_json_form():
    parsed = parse_serve_args(
        [
            "m",
            "--speculative-config",
            '{"method": "eagle"}',
            "--speculative-config.draft.size",
            "80g",
            "--speculative-config.draft.on",
            "true",
            "--speculative-config.ids+",
            "1,2",
            "--speculative-config.ids+",
            "3",
        ]
    )
    assert parsed.speculative_config == {"draft": {"size": 80_000_000_000, "on": True}, "ids": ["1", "2", "3"]}
    assert [lint.code for lint in parsed.lints] == ["dotted-replaces-json"]


def test_invalid_json_reports_message_and_position():
    parsed = parse_serve_args(["m", "--speculative-config", '{"method": "ngram",}'])
    assert parsed.speculative_config is None
    err = parsed.speculative_config_error
    assert err["pos"] == 19 and err["lineno"] == 1 and err["colno"] == 20
    assert "property name" in err["message"]


def test_canonical_form_ignores_spelling_and_order():
    a = parse_serve_args(["m", "-tp", "2", "--max_model_len=4096", "-sc", '{"b": 1, "a": 2}']).canonical()
    b = parse_serve_args(
        ["m", "--speculative-config", '{"a":2,"b":1}', "--max-model-len", "4096", "--tensor-parallel-size", "2"]
    ).canonical()
    assert a == b
    assert a != parse_serve_args(["m", "--tensor-parallel-size", "4"]).canonical()


def test_key_value_where_json_is_required_is_linted():
    parsed = parse_serve_args(["m", "--limit-mm-per-prompt", "image=4"])
    assert [lint.code for lint in parsed.lints] == ["key-value-not-json"]


def test_placeholders():
    assert placeholders_in("<MODEL>", []) == ["<MODEL>"]
    assert placeholders_in("{your model directory}", []) == ["{your model directory}"]
    assert placeholders_in("/path/to/model", []) == ["/path/to/model"]
    assert placeholders_in("${HEAD_IP}:8000", ["${HEAD_IP}"]) == ["${HEAD_IP}"]
    assert placeholders_in("$HF_TOKEN", ["$HF_TOKEN"]) == []  # taken from the runner's env
    assert placeholders_in('{"model": "a/b"}', []) == []
    assert placeholders_in("your-huggingface-token", []) == ["your-huggingface-token"]
    assert placeholders_in("...", []) == ["..."]
