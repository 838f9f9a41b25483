"""Build a tiny Qwen3-style model for runner tests; run with a *target* env's Python.

    python make_tiny_model.py OUT_DIR [--layers N] [--tokenizer-from DIR] [--seed S]

Random weights (seeded), a byte-level BPE tokenizer trained offline on local text (this
interpreter's own standard library sources) with a ChatML chat template and the hermes
tool-call tokens.  A draft model is built with `--tokenizer-from TARGET --layers 1` so
both share one tokenizer and vocabulary.  Shapes follow ../shared/VLLM-CPU.md
(head_dim >= 32 for the CPU attention backend).
"""

import argparse
import json
import os
import shutil
import sysconfig
from pathlib import Path

CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nYou may call these tools:\n<tools>\n"
    "{%- for t in tools %}{{ t | tojson }}\n{% endfor %}</tools>\n"
    "Answer with <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>.<|im_end|>\n{% endif %}"
    "{%- for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{%- if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{%- for part in m['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{%- endif %}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
VOCAB = 2000


def corpus_lines(limit=3_000_000):
    root = Path(sysconfig.get_paths()["stdlib"])
    size = 0
    for path in sorted(root.glob("*.py")):
        text = path.read_text(errors="ignore")
        size += len(text)
        yield text
        if size > limit:
            return


def train_tokenizer(out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB - 16, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus_lines(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--tokenizer-from")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--head-dim", type=int, default=32, help="32+ for vLLM's CPU attention backend")
    a = ap.parse_args()
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.tokenizer_from:
        for f in Path(a.tokenizer_from).glob("*token*"):
            shutil.copy(f, out / f.name)
    else:
        train_tokenizer(out)
    ids = json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]
    cfg = Qwen3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=a.layers,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=a.head_dim, max_position_embeddings=2048,
                      tie_word_embeddings=True, dtype="bfloat16", bos_token_id=ids["<|endoftext|>"],
                      eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
    torch.manual_seed(a.seed)
    model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    gen = {"bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id, "do_sample": False}
    (out / "generation_config.json").write_text(json.dumps(gen))
    # Marks the directory as a stand-in: verdicts obtained with it are labelled so.
    (out / "driftmatrix-standin.json").write_text(json.dumps({"family": "qwen3", "layers": a.layers, "seed": a.seed}))
    print(json.dumps({"dir": str(out), "params": sum(p.numel() for p in model.parameters())}))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
