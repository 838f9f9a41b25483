"""Issue 16's agreement figure: for the pinned CPU builds, every option the docs corpora use
gets the same accepted / not-accepted answer from the shipped flag history as from the build's
own `vllm serve` parser. Prints the agreement and every disagreement; exits 1 on any.

    .venv/bin/python benchmarks/history_agreement.py [CORPUS_DIR]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from extractor.catalog import extract

from runner.builds.resolve import stable_pin
from runner.builds.history_agreement import ask_parser, compare, docs_tokens
from flaghistory.history import FlagHistory
from runner.builds.envs import ensure
from runner.settings import cache_dir
from runner.builds.targets import DEFAULT_CPU, load



def result_answers(answers: dict, result) -> dict:
    return {t: ok for t, ok in answers["accepts"].items()} if result.tokens == len(answers["accepts"]) else \
        {t: answers["accepts"][t] for t in tokens}


corpus = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "corpus")
started = time.monotonic()
catalog, _ = extract(stable=stable_pin(), sources=[corpus / "vllm-docs" / "0.20.1", corpus / "vllm-docs" / "0.33.0", corpus / "recipes" / "8959cf6"])
tokens = docs_tokens(catalog)
print(f"{len(catalog.snippets)} commands, {len(tokens)} distinct option tokens ({time.monotonic() - started:.0f} s)")
history, failed = FlagHistory.load(), 0
for target in load(DEFAULT_CPU).targets:
    env = ensure(target, cache_dir())
    extra = [f for f in history.flags if f.startswith("--")]  # every option any release had, two spellings
    wider = sorted({*tokens, *extra, *(f.replace("-", "_").replace("__", "--", 1) for f in extra)})
    answers = ask_parser(env.python, wider)
    docs_only = dict(answers, accepts={t: answers["accepts"][t] for t in tokens})
    for label, result in (("docs options", compare(history, env.version, docs_only)),
                          ("docs + every release's options", compare(history, env.version, answers))):
        failed += len(result.disagreements)
        rejected = sum(1 for t, ok in result_answers(answers, result).items() if not ok)
        print(f"vLLM {env.version} ({target.name}), {label}: {result.agree}/{result.tokens} agree "
              f"({result.percent:.1f} %; {rejected} of them rejected by the build)")
        for d in result.disagreements:
            print("  " + json.dumps(d))
    print(f"  option sets: parser {result.parser_options}, history {result.history_options}, "
          f"only in parser {result.only_in_parser}, only in history {result.only_in_history}")
print(f"done in {time.monotonic() - started:.0f} s")
sys.exit(1 if failed else 0)
