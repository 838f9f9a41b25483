"""The production stack's Helm values (issue 45, point 5): each modelSpec entry is the `vllm serve`
command the chart's template composes (extractor/helm_values.py, extractor/helm_chart.py), read
from real files of the production-stack tree; Kubernetes manifests of whole YAML files too."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftmatrix.extractor.corpus import detect, extract_file
from driftmatrix.extractor.helm_chart import go_float
from driftmatrix.extractor.helm_values import compose, from_helm_values, from_yaml_fence, from_yaml_file
from driftmatrix.extractor.snippet_builder import Place
from driftmatrix.extractor.yaml_commands import from_yaml_block
from driftmatrix.extractor.yaml_nodes import compose_all

THIRDPARTY = Path(__file__).parents[2].parent / "shared" / "corpus" / "thirdparty"
STACK = THIRDPARTY / "production-stack-a6c01db"
TPU = THIRDPARTY / "tpu-inference-b8692ff01"

pytestmark = pytest.mark.skipif(not STACK.is_dir(), reason="the third-party corpus is not here")


def read(root: Path, rel: str):
    """(the file's text, its lines) of a corpus file."""
    text = (root / rel).read_text(encoding="utf-8")
    return text, text.split("\n")


def line_of(lines: list[str], needle: str, after: int = 0) -> int:
    """1-based line of the first line holding `needle` after line `after`."""
    return next(n for n, line in enumerate(lines, 1) if n > after and needle in line)


def place(rel: str, line: int = 1) -> Place:
    return Place("thirdparty", "a6c01db", rel, line)


def arg_lines(text: str, first_line: int = 1) -> dict[str, int]:
    """Each argument of the single entry composed from `text`, with its file line."""
    [composed] = [c for root in compose_all(text) for c in compose(root)]
    return {a.text: first_line + a.line for a in composed.args}


# --- real values files ---------------------------------------------------------------------------


def test_basic_config_values_file_is_the_charts_command():
    rel = "tutorials/assets/values-02-basic-config.yaml"
    text, lines = read(STACK, rel)
    snippets, diagnostics = from_yaml_file(text, place(rel))
    assert diagnostics == []
    [s] = snippets
    # deployment-vllm-multi.yaml's order: model, host/port, chunked prefill (hasKey: its `--no-` form),
    # prefix caching (false: `--no-`), maxModelLen, dtype, then extraArgs as written
    assert s.argv == [
        "meta-llama/Llama-3.1-8B-Instruct",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--no-enable-chunked-prefill",
        "--no-enable-prefix-caching",
        "--max-model-len",
        "4096",
        "--dtype",
        "bfloat16",
        "--gpu-memory-utilization",
        "0.8",
    ]
    assert s.kind == "docker" and s.image == "vllm/vllm-openai:latest" and s.runnable
    src = s.sources[0]
    assert src.line == line_of(lines, '- name: "llama3"') and src.context == "helm:modelSpec[0]"
    assert src.text.split("\n")[0] == lines[src.line - 1]
    assert "hf_token" in src.text.split("\n")[-1]  # the whole entry, as written
    args = arg_lines(text)
    assert args["--max-model-len"] == args["4096"] == line_of(lines, "maxModelLen: 4096")
    assert args["--no-enable-chunked-prefill"] == line_of(lines, "enableChunkedPrefill: false")
    assert args["--gpu-memory-utilization"] == args["0.8"] == line_of(lines, "extraArgs:")
    assert args["meta-llama/Llama-3.1-8B-Instruct"] == line_of(lines, "modelURL:")


def test_tutorial_fence_carries_the_removed_swap_space_option():
    rel = "tutorials/07-benchmark-multi-round-qa-single-gpu.md"
    text, lines = read(STACK, rel)
    snippets, _ = extract_file(detect(STACK), STACK / rel)
    helm = [s for s in snippets if s.sources[0].context.startswith("helm:")]
    assert len(helm) == 2  # the page's two values documents
    first = min(helm, key=lambda s: s.sources[0].line)
    i = first.argv.index("--swap-space")
    assert first.argv[i + 1] == "0"  # the YAML int 0, as the chart's `quote` prints it
    src = first.sources[0]
    assert src.line == 35 and lines[src.line - 1].strip() == '- name: "llama3"'
    assert first.image == "lmcache/vllm-openai:2025-03-10"
    # the argument's own line: the fence opens at line 31, its text starts at 32
    fence_start = line_of(lines, "```yaml")
    fence_end = line_of(lines, "```", after=fence_start)
    fence = "\n".join(lines[fence_start : fence_end - 1])
    assert arg_lines(fence, fence_start + 1)["--swap-space"] == 51
    assert '"--swap-space", 0' in lines[50]


def test_an_image_tag_that_is_a_vllm_version_is_what_the_entry_is_written_for():
    rel = "tutorials/25-v100-legacy-gpu-deployment.md"
    snippets, _ = extract_file(detect(STACK), STACK / rel)
    helm = [s for s in snippets if s.sources[0].context.startswith("helm:")]
    assert helm and all(s.image == "vllm/vllm-openai:v0.8.5" for s in helm)
    assert {s.sources[0].written_for.spec for s in helm} == {"==0.8.5"}
    latest, _ = extract_file(detect(STACK), STACK / "tutorials/02-basic-vllm-config.md")
    helm = [s for s in latest if s.sources[0].context.startswith("helm:")]
    assert helm and all(s.image == "vllm/vllm-openai:latest" for s in helm)
    assert all("the image it runs" not in s.sources[0].written_for.origin for s in helm)  # `latest` states nothing


def test_ray_entry_is_composed_by_the_ray_template():
    rel = "tutorials/assets/values-15-a-minimal-pipeline-parallel-example-raycluster.yaml"
    text, _ = read(STACK, rel)
    [s], _ = from_yaml_file(text, place(rel))
    assert s.argv[5:7] == ["--distributed-executor-backend", "ray"]
    assert "--pipeline-parallel-size" in s.argv and "--no-enable-prefix-caching" not in s.argv
    assert s.sources[0].context == "helm:modelSpec[0] (ray)"


def test_keys_written_outside_vllm_config_are_reported_at_their_line():
    rel = "deployment_on_cloud/oci/production_stack_specification.yaml"
    text, lines = read(STACK, rel)
    [s], diagnostics = from_yaml_file(text, place(rel))
    assert "--max-model-len" not in " ".join(s.argv)  # the chart ignores a modelSpec-level extraArgs
    [misplaced] = [d for d in diagnostics if d.code == "helm-key-misplaced"]
    assert misplaced.severity == "warning" and misplaced.line == line_of(lines, "extraArgs:")


def test_chart_values_example_entry_not_deployed_is_said():
    text, lines = read(STACK, "helm/values.yaml")
    snippets, diagnostics = from_yaml_file(text, place("helm/values.yaml"))
    assert snippets == []
    [d] = diagnostics
    assert d.code == "helm-model-not-deployed" and d.line == line_of(lines, "enabled: false")


# --- Kubernetes manifests, CI files, templates -----------------------------------------------------


def test_kubernetes_manifest_file_gives_its_command():
    rel = "src/gateway_inference_extension/configs/vllm/gpu-deployment.yaml"
    text, lines = read(STACK, rel)
    [s], _ = from_yaml_file(text, place(rel))
    assert s.kind == "serve" and s.model == "meta-llama/Llama-3.2-1B-Instruct"
    assert s.argv[:4] == ["--model", "meta-llama/Llama-3.2-1B-Instruct", "--tensor-parallel-size", "1"]
    assert s.sources[0].line == line_of(lines, 'command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]')
    assert [lint.code for lint in s.lints] == ["legacy-entrypoint"]


@pytest.mark.skipif(not TPU.is_dir(), reason="the tpu-inference corpus is not here")
def test_kubernetes_manifest_with_bash_dash_c_dash_dash():
    rel = ".buildkite/kubernetes/manifests/v7x/single_decode.yaml"
    text, lines = read(TPU, rel)
    # `command: ["/bin/bash", "-c", "--"]`, the script in `args`: read as a block...
    [s], _ = from_yaml_block(text, place(rel))
    assert s.model == "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8" and "--seed=42" in s.argv
    assert s.sources[0].line == line_of(lines, 'args: ["vllm serve --seed=42')
    # ...but as a repository's file it is CI configuration, not instructions to readers: not read
    assert from_yaml_file(text, place(rel)) == ([], [])


@pytest.mark.skipif(not TPU.is_dir(), reason="the tpu-inference corpus is not here")
def test_gke_benchmark_deployment_gives_its_command():
    rel = "examples/offload/gke/benchmarks/single-host/deploy-baseline.yaml"
    text, lines = read(TPU, rel)
    [s], _ = from_yaml_file(text, place(rel))
    assert s.model == "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8" and "--tensor-parallel-size" in s.argv
    assert s.sources[0].line == line_of(lines, '"vllm serve Qwen/Qwen3-235B')


def test_chart_templates_and_crd_prose_give_no_command():
    text, _ = read(STACK, "helm/templates/deployment-vllm-multi.yaml")
    assert from_yaml_file(text, place("helm/templates/deployment-vllm-multi.yaml")) == ([], [])
    rel = "operator/config/default.yaml"  # its CRD's schema says "Extra arguments for vllm serve"
    text, _ = read(STACK, rel)
    assert from_yaml_block(text, place(rel))[0]  # what reading the prose as a script gave
    assert from_yaml_file(text, place(rel))[0] == []


# --- the template's rules, on small values ---------------------------------------------------------

VALUES = """\
servingEngineSpec:
  modelSpec:
  - name: m
    repository: vllm/vllm-openai
    tag: v0.10.0
    modelURL: facebook/opt-125m
{extra}"""


def composed(extra: str) -> tuple[list[str], list]:
    snippets, diagnostics = from_helm_values(VALUES.format(extra=extra), place("v.yaml", 10))
    return (snippets[0].argv if snippets else []), diagnostics


def test_prefix_caching_off_only_inside_vllm_config():
    assert composed("")[0] == ["facebook/opt-125m", "--host", "0.0.0.0", "--port", "8000"]
    argv, _ = composed("    vllmConfig:\n      maxNumSeqs: 8\n")
    assert argv[5:] == ["--no-enable-prefix-caching", "--max-num-seqs", "8"]
    argv, _ = composed('    vllmConfig:\n      enablePrefixCaching: "false"\n')  # a non-empty string is true in Go
    assert argv[5:] == ["--enable-prefix-caching"]


def test_unknown_vllm_config_key_is_a_warning_at_its_line():
    argv, diagnostics = composed("    vllmConfig:\n      maxNumBatchedTokens: 2048\n      dtype: half\n")
    assert argv[-2:] == ["--dtype", "half"] and "2048" not in argv
    [d] = diagnostics
    assert (d.severity, d.code, d.line) == ("warning", "helm-key-not-on-command-line", 10 + 7)
    assert "maxNumBatchedTokens" in d.message


def test_values_print_as_helm_prints_them():
    argv, _ = composed("    vllmConfig:\n      maxModelLen: 1000000\n      extraArgs: [--x, 0, true, 0.50]\n")
    assert argv[-6:] == ["--max-model-len", "1e+06", "--x", "0", "true", "0.5"]  # float64 through %v
    assert [go_float(x) for x in (4096.0, 0.8, 123456.0, 1048576.0, 1e-05)] == [
        "4096",
        "0.8",
        "123456",
        "1.048576e+06",
        "1e-05",
    ]


def test_bad_values_are_diagnostics_and_the_rest_goes_on():
    argv, diagnostics = composed(
        "    vllmConfig:\n      dtype: [a]\n      extraArgs: [{a: 1}, --y]\n  - just a string\n"
    )
    assert argv[-1] == "--y" and "--dtype" not in argv
    assert sorted(d.code for d in diagnostics) == ["helm-model-spec", "helm-value", "helm-value"]
    snippets, diagnostics = from_yaml_fence("servingEngineSpec:\n  modelSpec: [\n", place("x.md", 3))
    assert snippets == [] and [d.code for d in diagnostics] == ["yaml-error"]


def test_fence_without_helm_values_still_reads_kubernetes_containers():
    text = "containers:\n- name: v\n  command: [vllm, serve, facebook/opt-125m]\n"
    [s], _ = from_yaml_fence(text, place("x.md", 5))
    assert s.argv == ["facebook/opt-125m"] and s.sources[0].line == 7


# --- templates, one YAML document at a time (issue 59 point 6) ------------------------------------

CHAT_TEMPLATE_MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: chat-template
data:
  template.j2: |
    {{ bos_token }}
    {% for message in messages %}
    {{ message['content'] }}
    {% endfor %}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: opt
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.0
        command: ["vllm", "serve", "facebook/opt-125m", "--chat-template", "/t/template.j2"]
"""


def test_a_manifest_skips_only_its_template_document_and_says_so():
    found, diagnostics = from_yaml_file(CHAT_TEMPLATE_MANIFEST, place("deploy/opt.yaml"))
    [snippet] = found
    assert snippet.model == "facebook/opt-125m" and "--chat-template" in snippet.argv
    assert snippet.sources[0].line == 22
    [note] = diagnostics
    assert (note.code, note.file, note.line) == ("yaml-template-document", "deploy/opt.yaml", 1)
    assert "line 7 starts with `{{`" in note.message
    # the Deployment first, the template after `---`: the template's line is the one after the marker
    swapped = CHAT_TEMPLATE_MANIFEST.split("---\n")
    found, diagnostics = from_yaml_file(swapped[1] + "---\n" + swapped[0], place("deploy/opt.yaml"))
    assert [s.sources[0].line for s in found] == [11]
    assert [(d.code, d.line) for d in diagnostics] == [("yaml-template-document", 13)]  # `---` is line 12


def test_the_real_macos_deployment_with_a_chat_template_configmap_is_read(corpus):
    root = next((corpus / "thirdparty").glob("aibrix-*"))
    rel = "development/vllm/macos/deployment.yaml"
    text, lines = read(root, rel)
    found, diagnostics = from_yaml_file(text, place(rel))
    [snippet] = found
    assert snippet.argv[snippet.argv.index("--model") + 1] == "facebook/opt-125m"
    assert "--chat-template" in snippet.argv and "--device" in snippet.argv
    assert lines[snippet.sources[0].line - 1].strip() == "- vllm"
    [note] = diagnostics
    assert note.code == "yaml-template-document"
    assert lines[note.line - 1] == "apiVersion: v1" and lines[note.line] == "kind: ConfigMap"
