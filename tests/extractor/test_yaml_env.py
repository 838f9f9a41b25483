"""The environment a docs YAML sets around a command fills in its `$VAR`s, and a command in a YAML
script is placed at its own file line (issue 21, points 5 and 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftmatrix.extractor.corpus import detect, extract_file
from driftmatrix.extractor.serve_args import parse_serve_args
from driftmatrix.extractor.snippet_builder import Place, snippet_id
from driftmatrix.extractor.yaml_commands import from_yaml_block

VERSIONS = ["0.20.1", "0.33.0"]


def page(corpus: Path, version: str, rel: str):
    """(yaml snippets of one docs page, the page's lines)."""
    root = corpus / "vllm-docs" / version
    snippets, _ = extract_file(detect(root), root / rel)
    lines = (root / rel).read_text(encoding="utf-8").split("\n")
    return [s for s in snippets if "yaml" in s.sources[0].context], lines


def lines_with(lines: list[str], needle: str) -> list[int]:
    return [i for i, line in enumerate(lines, 1) if needle in line]


@pytest.mark.parametrize("version", VERSIONS)
def test_skypilot_envs_fill_the_model(corpus, version):
    snippets, lines = page(corpus, version, "docs/deployment/frameworks/skypilot.md")
    serve_lines = lines_with(lines, "vllm serve $MODEL_NAME")
    assert len(serve_lines) == 3
    assert sorted(s.sources[0].line for s in snippets) == serve_lines  # each at its `vllm serve` line
    for s in snippets:
        assert s.model == "meta-llama/Meta-Llama-3-8B-Instruct" and s.argv[0] == s.model
        assert "$MODEL_NAME" not in s.placeholders
        # What the task's `envs:` sets; the token's placeholder is not carried (the runner supplies its
        # own HF_TOKEN), though the id still hashes the env as written.
        assert s.env["MODEL_NAME"] == s.model and "HF_TOKEN" not in s.env
        # SkyPilot sets the GPU count at run time: the one thing still missing.
        assert s.placeholders == ["$SKYPILOT_NUM_GPUS_PER_NODE"] and not s.runnable
        assert s.reason == "placeholder: $SKYPILOT_NUM_GPUS_PER_NODE"


@pytest.mark.parametrize("version", VERSIONS)
def test_dstack_env_list_fills_the_model_and_runs(corpus, version):
    snippets, lines = page(corpus, version, "docs/deployment/frameworks/dstack.md")
    [s] = snippets
    assert s.model == "NousResearch/Llama-2-7b-chat-hf" and s.argv == [s.model, "--port", "8000"]
    assert s.env == {"MODEL": "NousResearch/Llama-2-7b-chat-hf"}
    assert s.runnable and s.placeholders == []
    assert [s.sources[0].line] == lines_with(lines, "- vllm serve $MODEL")
    assert s.sources[0].text == "vllm serve $MODEL --port 8000"  # as written


def test_lws_container_env_and_sh_c_script_lines(corpus):
    snippets, lines = page(corpus, "0.33.0", "docs/deployment/frameworks/lws.md")
    by_line = {s.sources[0].line: s for s in snippets}
    # Ray leader: `- "bash …leader …;` then, on the next file line, `vllm serve … ray"` (one
    # double-quoted YAML string, which YAML folds into one line).
    [ray] = lines_with(lines, "vllm serve meta-llama/Meta-Llama-3.1-405B-Instruct --port 8080")
    assert "multi-node-serving.sh leader" in lines[ray - 2]
    leader = by_line[ray]
    # HF_TOKEN: <your-hf-token> is the reader's own secret, which the runner supplies: runnable, and the
    # record does not carry the placeholder text (issue 32); the id hashes the env as written.
    assert leader.runnable and leader.env == {}
    assert leader.id == snippet_id(
        "serve", parse_serve_args(leader.argv).canonical(), {"HF_TOKEN": "<your-hf-token>"}, None
    )
    assert leader.sources[0].text.endswith("--distributed-executor-backend ray")  # no closing quote
    # LWS sets these at run time: placeholders, whatever the container's env.
    for line in lines_with(lines, '- "vllm serve meta-llama/Meta-Llama-3.1-405B-Instruct'):
        assert by_line[line].placeholders == ["$(LWS_GROUP_SIZE)", "$(LWS_WORKER_INDEX)", "$(LWS_LEADER_ADDRESS)"]
    assert len(snippets) == 3


@pytest.mark.parametrize(
    "version,needle,count",
    [
        ("0.33.0", "vllm serve meta-llama/Llama-3.1-405B-Instruct", 6),
        ("0.20.1", "python3 -m vllm.entrypoints.openai.api_server", 2),
    ],
)
def test_kthena_folded_and_quoted_scripts_at_the_serve_line(corpus, version, needle, count):
    snippets, lines = page(corpus, version, "docs/deployment/integrations/kthena.md")
    # Folded `- >` scripts and multi-line quoted ones start with `bash …multi-node-serving.sh` lines.
    expected = lines_with(lines, needle)
    assert sorted(s.sources[0].line for s in snippets) == expected and len(expected) == count
    for s in snippets:
        assert needle in lines[s.sources[0].line - 1]


def test_folded_script_shows_the_file_lines(corpus):
    snippets, lines = page(corpus, "0.33.0", "docs/deployment/integrations/kthena.md")
    # The first of two: the `- >` one (its arguments go on on the next line; the second is quoted).
    line = lines_with(lines, "vllm serve meta-llama/Llama-3.1-405B-Instruct --port 8080 --tensor-parallel-size 8")[0]
    assert lines[line - 4].strip() == "- >"
    [s] = [s for s in snippets if s.sources[0].line == line]
    assert s.sources[0].text == "\n".join(x.strip() for x in lines[line - 1 : line + 1])
    assert s.argv[-4:] == ["--pipeline-parallel-size", "2", "--distributed-executor-backend", "ray"]


@pytest.mark.parametrize("version", VERSIONS)
def test_k8s_sh_c_args_lines(corpus, version):
    snippets, lines = page(corpus, version, "docs/deployment/k8s.md")
    expected = [i for i in lines_with(lines, "vllm serve ") if lines[i - 1].strip().startswith('"')]
    assert sorted(s.sources[0].line for s in snippets) == expected and len(expected) == 4
    assert all(s.runnable for s in snippets)


def snippets_of(yaml_text: str):
    snippets, diags = from_yaml_block(yaml_text, Place("vllm-docs", "x", "p.md", 10))
    assert diags == []
    return snippets


def test_secrets_placeholders_and_unset_stay_placeholders():
    [s] = snippets_of("""env:
  - MODEL=org/m
  - HF_TOKEN
  - MY_API_KEY=abc123
  - DRAFT=<draft-model>
  - REV=$OTHER
commands:
  - vllm serve $MODEL --hf-token $HF_TOKEN --api-key $MY_API_KEY --revision "${REV}" --tokenizer $DRAFT
""")
    assert s.model == "org/m"
    assert s.placeholders == ["$MY_API_KEY", "${REV}", "$DRAFT", "<draft-model>"]
    assert s.env == {"MODEL": "org/m", "MY_API_KEY": "abc123", "DRAFT": "<draft-model>", "REV": "$OTHER"}
    assert s.sources[0].line == 17  # block line 10 + 7


def test_k8s_env_fills_shell_and_k8s_variables():
    [serve, script] = snippets_of("""containers:
- name: a
  image: vllm/vllm-openai:latest
  env:
  - name: MODEL
    value: org/m
  - name: TP
    value: "2"
  - name: HF_TOKEN
    valueFrom: {secretKeyRef: {name: s, key: t}}
  command: ["vllm", "serve"]
  args: ["$(MODEL)", "-tp", "$(TP)", "--port", "$(PORT)"]
- name: b
  env:
  - {name: ARGS, value: "--max-model-len 4096 --enforce-eager"}
  - {name: MODEL, value: org/other}
  command: ["/bin/sh", "-c"]
  args:
  - |
    echo start
    vllm serve "$MODEL" $ARGS
""")
    assert serve.argv == ["org/m", "-tp", "2", "--port", "$(PORT)"] and serve.placeholders == ["$(PORT)"]
    assert serve.env == {"MODEL": "org/m", "TP": "2"}  # the secret is the runner's: not recorded
    assert script.argv == ["org/other", "--max-model-len", "4096", "--enforce-eager"] and script.runnable
    assert script.sources[0].line == 10 + 20


def test_mapping_envs_nest_and_override():
    [s] = snippets_of("""envs:
  MODEL: org/outer
  PORT: 8000
service:
  envs: {MODEL: org/inner, EMPTY: "", UNSET: null}
  run: vllm serve ${MODEL} --port $PORT --served-model-name "$UNSET"
""")
    assert s.argv == ["org/inner", "--port", "8000", "--served-model-name", "$UNSET"]
    assert s.env == {"MODEL": "org/inner", "PORT": "8000", "EMPTY": ""} and s.placeholders == ["$UNSET"]


def test_folded_script_with_quoted_json_keeps_its_words_and_finds_its_line():
    [s] = snippets_of("""envs:
  M: org/m
run: >
  echo hi;
  vllm serve $M --speculative-config '{"method":
  "ngram", "num_speculative_tokens": 3}'
  --port 1
""")
    assert s.sources[0].line == 10 + 4
    assert s.argv == [
        "org/m",
        "--speculative-config",
        '{"method": "ngram", "num_speculative_tokens": 3}',
        "--port",
        "1",
    ]
    assert s.speculative_config == {"method": "ngram", "num_speculative_tokens": 3}


def test_a_variable_the_script_assigns_is_not_filled_from_the_yaml():
    [s] = snippets_of("""envs: {MODEL: org/m, PORT: "8000"}
run: |
  export MODEL=$(cat model.txt)
  vllm serve $MODEL --port $PORT
""")
    assert s.argv == ["$MODEL", "--port", "8000"] and s.placeholders == ["$MODEL"]


@pytest.mark.parametrize(
    "version,needle,first_option",
    [
        ("0.33.0", "vllm serve meta-llama/Llama-3.1-405B-Instruct", "--tensor-parallel-size 8"),
        ("0.20.1", "python3 -m vllm.entrypoints.openai.api_server", "--port 8080"),
    ],
)
def test_folded_block_with_more_indented_options_is_cut_where_the_shell_ends_it(corpus, version, needle, first_option):
    """kthena.md's multiprocessing leader and worker (`- >` then `vllm serve m` and its options indented
    two more): YAML keeps those line breaks, so `sh -c` runs `vllm serve m` alone. Before: the options
    were dropped from the argv, with an `orphan-arguments` lint per line; now the command as meant,
    with one `folded-line-break` lint on the line where the shell ends it."""
    snippets, lines = page(corpus, version, "docs/deployment/integrations/kthena.md")
    cut = [s for s in snippets if any(lint.code == "folded-line-break" for lint in s.lints)]
    assert cut and len(cut) == (2 if version == "0.33.0" else 1)  # leader and worker (0.20.1: the leader)
    for s in cut:
        line = s.sources[0].line
        assert needle in lines[line - 1] and lines[line].strip() == first_option
        assert lines[line].index("--") > lines[line - 1].index(needle[:4])  # indented more: the break stays
        [lint] = [x for x in s.lints if x.code == "folded-line-break"]
        assert lint.line == line and f"`{first_option}`" in lint.message
        assert not any(x.code == "orphan-arguments" for x in s.lints)
        assert " ".join(s.argv).count(first_option) == 1 and "--pipeline-parallel-size" in s.argv
        assert s.sources[0].text.split("\n")[1].strip() == first_option  # the block as written
    # the Ray variant (0.33.0) folds lines of one indentation: one command, nothing to say
    ray = [s for s in snippets if "ray" in s.argv]
    assert (ray or version == "0.20.1") and not any(x.code == "folded-line-break" for s in ray for x in s.lints)


def test_folded_block_more_indented_inside_quotes_is_not_cut():
    """A more-indented line inside a quoted value keeps its break, but inside quotes the shell goes on."""
    [s] = snippets_of("""command: ["sh", "-c"]
args:
  - >
    vllm serve org/m --speculative-config '{"method": "ngram",
      "num_speculative_tokens": 3}' --port 1
""")
    assert not s.lints and s.speculative_config == {"method": "ngram", "num_speculative_tokens": 3}
