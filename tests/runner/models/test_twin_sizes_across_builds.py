"""The same twin on every build (issue 35): a twin's sizes come from one rule over the model's config
and the command (runner/intarget/twin_generic.py shrinking, twin_split.py fitting the parallel
split), so the twins a command gets from two builds' transformers (5.8.1 on stable, 5.19.0 on
nightly) have the same heads, KV heads, layers, widths, experts and top-k, even where the two
transformers releases give the architecture's configuration class other defaults or key names."""

from __future__ import annotations

import json
import subprocess

from driftmatrix import runner

# architectures both transformers releases know, with the split a documented command asks for
CASES = {
    "Qwen3MoeForCausalLM": {"tp": 4, "ep": 4},
    "DeepseekV3ForCausalLM": {"tp": 8},
    "MixtralForCausalLM": {"tp": 2, "pp": 2},
    "Ernie4_5_MoeForCausalLM": {"tp": 2},
    "GptOssForCausalLM": {"tp": 8, "ep": 8},
    "Glm4MoeForCausalLM": {"tp": 8, "pp": 2},
    "Qwen2_5_VLForConditionalGeneration": {"tp": 2},
    "Phi3ForCausalLM": {},
}

SIZES = """
import json, sys
sys.path.insert(0, sys.argv[1])
import twin_generic as g
out = {}
for arch, split in json.loads(sys.argv[2]).items():
    try:
        source, _, _ = g.source_config(arch, None)
    except g.NoTwin as exc:
        out[arch] = str(exc)
        continue
    cfg, _, _ = g.twin_config(source, 2, split=split)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    def first(keys):
        return next((text[k] for k in keys if isinstance(text.get(k), int) and not isinstance(text.get(k), bool)), None)
    out[arch] = {"heads": first(g.HEADS), "kv_heads": first(g.KV_HEADS), "layers": first(g.LAYER_COUNTS),
                 "hidden": first(("hidden_size", "n_embd")), "head_dim": g.head_dim(text),
                 "experts": first(g.EXPERTS), "top_k": first(g.TOP_K)}
print(json.dumps(out))
"""


def sizes(env) -> dict:
    proc = subprocess.run(
        [env.python, "-c", SIZES, str(runner.INTARGET), json.dumps(CASES)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", **env.env},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_twin_sizes_do_not_depend_on_the_transformers_release(cpu_envs):
    stable, nightly = cpu_envs["stable"], cpu_envs["nightly"]
    assert stable.info["transformers"] != nightly.info["transformers"]
    old, new = sizes(stable), sizes(nightly)
    compared = [a for a in CASES if isinstance(old[a], dict) and isinstance(new[a], dict)]
    assert len(compared) >= 6, (old, new)  # both releases know most of them
    for arch in compared:
        assert old[arch] == new[arch], (arch, old[arch], new[arch])
        got = new[arch]
        split = CASES[arch]
        assert got["heads"] % split.get("tp", 1) == 0 and got["layers"] >= split.get("pp", 1)
        if got["experts"]:
            assert got["top_k"] <= got["experts"] and got["experts"] % split.get("ep", 1) == 0
