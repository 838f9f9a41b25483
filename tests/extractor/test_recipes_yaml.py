from driftmatrix.extractor.recipes_yaml import from_recipe
from driftmatrix.extractor.snippet_builder import Place

RECIPE = """meta:
  title: T
model:
  model_id: "org/model"
  base_args: ["--trust-remote-code"]
  base_env: {VLLM_X: "1"}
features:
  tool_calling:
    args: ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
  spec_decoding:
    default_mode: mtp
    modes:
      eagle:
        args: ["--speculative-config", '{"method":"eagle3","model":"org/eagle","num_speculative_tokens":3}']
      mtp:
        variants: [default, fp8]
        args: ["--speculative-config", '{"method":"mtp","num_speculative_tokens":1}']
opt_in_features: [spec_decoding]
variants:
  default: {precision: bf16}
  fp8:
    model_id: org/model-FP8
    extra_args: ["--kv-cache-dtype", "fp8"]
    extra_env: {VLLM_Y: "2"}
guide: |
  ## Run
  ```bash
  vllm serve org/model --max-model-len 1024
  ```
"""


def test_recipe_commands_lines_and_guide():
    snippets, diags, guide = from_recipe(RECIPE, Place("recipes", "abc", "models/org/model.yaml", 1))
    assert diags == []
    by_context = {s.sources[0].context: s for s in snippets}
    default = by_context["recipe:model.model_id"]
    assert default.argv == [
        "org/model",
        "--trust-remote-code",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
    ]
    assert default.env == {"VLLM_X": "1"} and default.sources[0].line == 4
    assert default.sources[0].text.startswith("VLLM_X=1 vllm serve org/model --trust-remote-code")
    mtp = by_context["recipe:features.spec_decoding.modes.mtp.args"]
    assert mtp.speculative_config == {"method": "mtp", "num_speculative_tokens": 1}
    assert mtp.recipe["features"] == ["tool_calling", "spec_decoding:mtp"]
    assert mtp.sources[0].line == 17  # its `args:` line
    eagle = by_context["recipe:features.spec_decoding.modes.eagle.args"]
    assert eagle.speculative_config["model"] == "org/eagle"
    fp8 = by_context["recipe:variants.fp8"]
    assert fp8.model == "org/model-FP8" and fp8.argv[-2:] == ["--kv-cache-dtype", "fp8"]
    assert fp8.env == {"VLLM_X": "1", "VLLM_Y": "2"}
    assert all(s.sources[0].url == "https://recipes.vllm.ai/org/model" for s in snippets)
    assert guide.text.startswith("## Run") and guide.line == 25  # 0-based: the line after `guide: |`
    assert guide.claim == {}  # the recipe states no min_vllm_version


def test_not_a_recipe_is_a_warning():
    assert from_recipe("title: x\n", Place("recipes", "abc", "models/a.yaml", 1))[1][0].code == "not-a-recipe"


def test_flag_and_value_in_one_args_item_is_split(corpus):
    from driftmatrix.extractor.catalog import extract
    from driftmatrix.runner.builds.resolve import stable_pin
    from driftmatrix.runner.builds.targets import SEED_CPU

    catalog, _ = extract(stable=stable_pin(SEED_CPU), sources=[corpus / "vllm-docs" / "0.33.0"])
    mimo = [s for s in catalog.snippets if s.model == "XiaomiMiMo/MiMo-V2.5-Pro" and s.kind == "recipe"]
    assert mimo and all("--max-model-len auto" not in s.argv for s in mimo)
    assert all(s.argv[s.argv.index("--max-model-len") + 1] == "auto" for s in mimo)


def test_omni_recipes_compose_the_command_the_site_shows(corpus, snippets_from):
    """An omni recipe's commands carry `--omni` after the model (the site injects it; without it plain
    vLLM would judge vLLM-Omni's `--init-timeout` a removed flag), and a task with its own
    checkpoint is a command of its own, at its own line."""
    import yaml

    root = corpus / "recipes" / "8959cf6"
    omni = [
        p
        for p in sorted((root / "models").rglob("*.yaml"))
        if "omni" in ((yaml.safe_load(p.read_text()) or {}).get("meta") or {}).get("tasks", [])
    ]
    assert len(omni) >= 10
    for path in omni:
        got = snippets_from("recipes", "8959cf6", str(path.relative_to(root)))
        recipe = [s for s in got if s.kind == "recipe"]
        assert recipe, path
        assert all(s.argv[1] == "--omni" and s.argv.count("--omni") == 1 for s in recipe), path
    wan = [
        s
        for s in snippets_from("recipes", "8959cf6", "models/Wan-AI/Wan2.2-T2V-A14B-Diffusers.yaml")
        if s.kind == "recipe"
    ]
    tasks = {s.model: s for s in wan if s.sources[0].context.startswith("recipe:omni.tasks")}
    assert set(tasks) == {"Wan-AI/Wan2.2-I2V-A14B-Diffusers", "Wan-AI/Wan2.2-TI2V-5B-Diffusers"}
    assert tasks["Wan-AI/Wan2.2-I2V-A14B-Diffusers"].sources[0].line == 31  # its `- id: i2v` entry
    assert tasks["Wan-AI/Wan2.2-I2V-A14B-Diffusers"].recipe["features"][-1] == "omni:i2v"
