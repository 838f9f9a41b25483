"""The history checked against a real build's own parser, option by option.

For every option token the docs use (`--max_model_len`, `-O3`, `--speculative-config.method`,
`--no-enable-prefix-caching`), the built `vllm serve` parser of a target env answers "accepted
or not" (runner/intarget/serve_options.py: vLLM's own preprocessing, then argparse's own
matching) and the history answers for the same version; every disagreement is listed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from driftmatrix import runner
from driftmatrix.flaghistory.history import FlagHistory

SCRIPT = runner.INTARGET / "serve_options.py"
NOT_AN_OPTION = re.compile(r"^-\d|^-+$|[\s{}<>$]")
"""Negative numbers, bare dashes, placeholders and shell leftovers are values, not options."""
QUERY_TIMEOUT_S = 600


@dataclass
class Agreement:
    version: str
    """The build's vLLM version (the history is asked for the same one)."""
    tokens: int = 0
    agree: int = 0
    disagreements: list[dict] = field(default_factory=list)
    """{token, history, parser}: one per token the two answer differently."""
    parser_options: int = 0
    history_options: int = 0
    only_in_parser: list[str] = field(default_factory=list)
    only_in_history: list[str] = field(default_factory=list)
    """Beyond the docs: the full option sets compared (`-h`/`--help` left out)."""

    @property
    def percent(self) -> float:
        return 100.0 * self.agree / self.tokens if self.tokens else 100.0


def docs_tokens(catalog) -> list[str]:
    """Every option token the catalog's commands use, as written."""
    found = set()
    for snippet in catalog.snippets:
        for arg in snippet.argv or []:
            if arg.startswith("-") and not NOT_AN_OPTION.search(arg.split("=", 1)[0]):
                found.add(arg.split("=", 1)[0] if arg.startswith("--") else arg)
    return sorted(found)


def ask_parser(python: str, tokens: list[str], env: dict | None = None, probes: list[str] | None = None) -> dict:
    """The real build's answers: {options, allow_abbrev, accepts: {token: bool}}, and with `probes` (PROBES)
    also `arguments` (compare_arguments), in the same query: one vLLM import."""
    return ask_in_target(python, SCRIPT, tokens if probes is None else {"tokens": tokens, "probes": probes}, env)


def ask_in_target(python: str, script, query, env: dict | None = None) -> dict:
    """An in-target script's JSON answer (its last stdout line) to `query` (JSON on its stdin). Asked in
    the sandbox (runner/sandbox): the query comes from the docs and importing vLLM runs whatever the
    target environment holds."""
    from driftmatrix.runner.isolation import sandbox
    from driftmatrix.runner.isolation.env_policy import runner_env, without_secrets

    done, _ = sandbox.run(
        [python, str(script), "-"],
        python=python,
        kind="query",
        timeout=QUERY_TIMEOUT_S,
        input=json.dumps(query),
        env={**runner_env(), **without_secrets(env or {})},
        operator_env=env or {},
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{python} {script.name} exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(lines[-1])


def compare(history: FlagHistory, version: str, answers: dict) -> Agreement:
    result = Agreement(version)
    for token, real in sorted(answers["accepts"].items()):
        ours = history.accepts(token, version)
        result.tokens += 1
        if ours == real:
            result.agree += 1
        else:
            result.disagreements.append({"token": token, "history": ours, "parser": real})
    release = history.release_for(version)
    parser = set(answers["options"]) - {"-h", "--help"}
    ours_all = history.options(release) if release else set()
    result.parser_options, result.history_options = len(parser), len(ours_all)
    result.only_in_parser, result.only_in_history = sorted(parser - ours_all), sorted(ours_all - parser)
    return result


# -- what an option takes after it (issue 46): arity and type -------------------------------------
PROBES = [
    "two",
    "3",
    "-1",
    "32k",
    "32K",
    "1.5K",
    "25.6k",
    "32t",
    "1.5",
    "auto",
    "None",
    "",
    "{level:3}",
    '{"a": 1,}',
    '{"a": 1}',
    "[1, 2]",
    "true",
]
"""Words whose fate differs between int, float, human_readable_int (and its suffixes), optional_type and
the JSON types."""


@dataclass
class ArgumentAgreement:
    version: str
    options: int = 0
    takes_agree: int = 0
    types_agree: int = 0
    types_judged: int = 0
    history_cannot_say: int = 0
    """Options whose spec the history does not know there, or probes its spec does not answer."""
    disagreements: list[dict] = field(default_factory=list)
    """{option, probe (None: arity), history, build}."""


def compare_arguments(history: FlagHistory, version: str, answers: dict) -> ArgumentAgreement:
    """The history's spec of every long option against the build's own action (nargs) and type function."""
    from driftmatrix.flaghistory.arguments import judge

    result = ArgumentAgreement(version)
    release = history.release_for(version)
    for option, real in sorted(answers["arguments"].items()):
        result.options += 1
        spec = history.arg_spec(option, release) if release else None
        if spec is None or spec == "unknown":
            result.history_cannot_say += 1
            continue
        ours = spec.partition(":")[0]
        if ours != real["takes"]:
            result.disagreements.append({"option": option, "probe": None, "history": spec, "build": real["takes"]})
            continue
        result.takes_agree += 1
        for probe, took in sorted(real["types"].items()):
            said = judge(spec, probe, False, False).ok
            if said is None:
                result.history_cannot_say += 1
            elif said == took:
                result.types_agree += 1
                result.types_judged += 1
            else:
                result.types_judged += 1
                result.disagreements.append({"option": option, "probe": probe, "history": spec, "build": took})
    return result
