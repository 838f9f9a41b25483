"""Issue 16's agreement figure: for the pinned CPU builds, every option the docs corpora use
gets the same accepted / not-accepted answer from the shipped flag history as from the build's
own `vllm serve` parser. Issue 34's: every value and JSON key they use gets the same answer from
the history's `values`/`keys` as from the build (runner/intarget/serve_values.py). Prints the
agreement and every disagreement; exits 1 on any.

    .venv/bin/python benchmarks/history_agreement.py [CORPUS_DIR]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from driftmatrix.extractor.catalog import extract
from driftmatrix.flaghistory.history import FlagHistory
from driftmatrix.runner.builds.envs import ensure
from driftmatrix.runner.builds.history_agreement import ask_parser, compare, docs_tokens
from driftmatrix.runner.builds.resolve import stable_pin
from driftmatrix.runner.builds.targets import DEFAULT_CPU, load
from driftmatrix.runner.builds.value_agreement import ask_build, compare_values, docs_uses
from driftmatrix.runner.settings import cache_dir


def values_and_keys(history: FlagHistory, target, env) -> int:
    """Issue 34's figures for one target; returns the number of disagreements."""
    asked = time.monotonic()
    answers = ask_build(env.python, uses)
    result = compare_values(history, env.version, answers, uses)
    figures = result.figures()
    print(
        f"vLLM {env.version} ({target.name}), docs values and keys ({time.monotonic() - asked:.0f} s): "
        f"{figures['uses']} uses, {figures['agree']} agree, {figures['disagree']} disagree, "
        f"{figures['history_cannot_say']} the history cannot say, {figures['build_cannot_say']} the build cannot say; "
        f"{figures['agree_known_but_model_dependent']} of the agreed are known names whose working depends on the model"
    )
    for kind, counts in sorted(result.by_kind.items()):
        print(f"  {kind}: {json.dumps(counts)}")
    for d in result.disagreements:
        print("  disagree: " + json.dumps(d))
    for d in result.build_cannot_say:
        print("  build cannot say: " + json.dumps(d))
    whys: dict[str, int] = {}
    for d in result.history_cannot_say:
        whys[d["why"]] = whys.get(d["why"], 0) + 1
    print(f"  history cannot say, by why: {json.dumps(whys)}")
    for domain, diff in sorted(result.domains.items()):
        if diff["only_in_build"] or diff["only_in_history"]:
            print(
                f"  names of {domain} ({diff['history']} history, {diff['build']} build): "
                f"only in build {diff['only_in_build']}, only in history {diff['only_in_history']}"
            )
    for option, diff in sorted(result.keys.items()):
        if diff["only_in_build"] or diff["only_in_history"] or diff["closed"][0] != diff["closed"][1]:
            more = f" (+{len(diff['only_in_build']) - 8} more)" if len(diff["only_in_build"]) > 8 else ""
            print(
                f"  keys of {option}: closed history/build {diff['closed']}, only in build "
                f"{diff['only_in_build'][:8]}{more}, only in history {diff['only_in_history']}"
            )
    print(
        f"  {len(result.domains)} name sets and {len(result.keys)} key sets compared; the build could not "
        f"introspect: {json.dumps(result.build_unknown)}"
    )
    return len(result.disagreements)


def result_answers(answers: dict, result) -> dict:
    return (
        {t: ok for t, ok in answers["accepts"].items()}
        if result.tokens == len(answers["accepts"])
        else {t: answers["accepts"][t] for t in tokens}
    )


corpus = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "corpus")
started = time.monotonic()
catalog, _ = extract(
    stable=stable_pin(),
    sources=[corpus / "vllm-docs" / "0.20.1", corpus / "vllm-docs" / "0.33.0", corpus / "recipes" / "8959cf6"],
)
tokens = docs_tokens(catalog)
print(f"{len(catalog.snippets)} commands, {len(tokens)} distinct option tokens ({time.monotonic() - started:.0f} s)")
history, failed = FlagHistory.load(), 0
uses = docs_uses(catalog, history)
print(f"{len(uses)} value and key uses ({sum(1 for d in uses if d.use.kind == 'value')} values) by the history's names")
for target in load(DEFAULT_CPU).targets:
    env = ensure(target, cache_dir())
    extra = [f for f in history.flags if f.startswith("--")]  # every option any release had, two spellings
    wider = sorted({*tokens, *extra, *(f.replace("-", "_").replace("__", "--", 1) for f in extra)})
    answers = ask_parser(env.python, wider)
    docs_only = dict(answers, accepts={t: answers["accepts"][t] for t in tokens})
    for label, result in (
        ("docs options", compare(history, env.version, docs_only)),
        ("docs + every release's options", compare(history, env.version, answers)),
    ):
        failed += len(result.disagreements)
        rejected = sum(1 for t, ok in result_answers(answers, result).items() if not ok)
        print(
            f"vLLM {env.version} ({target.name}), {label}: {result.agree}/{result.tokens} agree "
            f"({result.percent:.1f} %; {rejected} of them rejected by the build)"
        )
        for d in result.disagreements:
            print("  " + json.dumps(d))
    print(
        f"  option sets: parser {result.parser_options}, history {result.history_options}, "
        f"only in parser {result.only_in_parser}, only in history {result.only_in_history}"
    )
    failed += values_and_keys(history, target, env)
print(f"done in {time.monotonic() - started:.0f} s")
sys.exit(1 if failed else 0)
