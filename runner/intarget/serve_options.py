"""Runs inside a target's Python: what this vLLM's own `vllm serve` parser accepts.

stdin: a JSON list of option tokens as the docs write them (`--max_model_len`, `-O3`,
`--speculative-config.method`), or {"tokens": [...], "probes": [...]}: then also `arguments`, for every
long option, what it takes after it (none/one/optional/many, from its action's nargs) and whether its
own type function turns each probe word into a value (argparse's `_get_value`: type only, not choices). Written as one JSON line to the original stdout (vLLM's own logging
is sent to stderr, as in vllm_helper.py), or to the file named by argv[1]: `options` (every option string of the
serve parser, `--no-…` twins included), `allow_abbrev`, and `accepts` (token → true/false),
each answered by the build's own code: FlexibleArgumentParser's preprocessing (underscores,
dotted keys, `-O`) and then argparse's own option matching (exact or unique prefix).
"""

import argparse
import json
import os
import sys

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))


class _Captured(Exception):
    def __init__(self, args):
        self.args_seen = list(args)


def _preprocessed(serve, token):
    """The tokens vLLM's FlexibleArgumentParser hands to argparse for `token VALUE`."""
    original = argparse.ArgumentParser.parse_known_args

    def capture(self, args=None, namespace=None):
        raise _Captured(args or [])

    argparse.ArgumentParser.parse_known_args = capture
    try:
        serve.parse_args([token, "1"])
    except _Captured as seen:
        return seen.args_seen
    except (Exception, SystemExit):
        return [token]
    finally:
        argparse.ArgumentParser.parse_known_args = original
    return [token]


def _matches(serve, token):
    """argparse's own answer: does this option string name one of the parser's actions?"""
    try:
        found = serve._parse_optional(token)
    except (Exception, SystemExit):  # an ambiguous prefix: argparse errors out
        return False
    if found is None:
        return False
    tuples = found if isinstance(found, list) else [found]  # Python ≥ 3.12.7 returns a list
    return any(t[0] is not None for t in tuples)


def accepts(serve, token):
    options = [t for t in _preprocessed(serve, token) if t.startswith("-") and t != "1"]
    return bool(options) and all(_matches(serve, t.split("=", 1)[0]) for t in options)


def takes(action):
    n = action.nargs
    return "none" if n == 0 else "one" if n is None else "optional" if n == "?" else "many"


def arguments(serve, probes):
    found = {}
    for option, action in serve._option_string_actions.items():
        if not option.startswith("--") or option == "--help":
            continue
        typed = {}
        if takes(action) in ("one", "optional"):
            for probe in probes:
                try:
                    serve._get_value(action, probe)
                    typed[probe] = True
                except (Exception, SystemExit):  # argparse.ArgumentError: the type refused it
                    typed[probe] = False
        found[option] = {"takes": takes(action), "types": typed}
    return found


def main():
    from . import vllm_helper  # its import points fd 1 at stderr and keeps the original stdout as PROTO
    from .vllm_helper import build_parser

    query = json.load(sys.stdin)
    tokens, probes = (query, None) if isinstance(query, list) else (query["tokens"], query.get("probes"))
    parser, _serve_cmd, _patched = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    serve = sub.choices["serve"]
    answers = {
        "options": sorted(serve._option_string_actions),
        "allow_abbrev": serve.allow_abbrev,
        "accepts": {t: accepts(serve, t) for t in tokens},
    }
    if probes is not None:
        answers["arguments"] = arguments(serve, probes)
    if sys.argv[1:] in ([], ["-"]):
        vllm_helper.PROTO.write(json.dumps(answers) + "\n")
    else:
        with open(sys.argv[1], "w") as out:
            json.dump(answers, out)


if __name__ == "__main__":
    main()
