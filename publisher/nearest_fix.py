"""Fix candidates from the nearest name (issue 46, point 2): an option, a value or a config key that
no vLLM release read has, where a build of the page's versions refused it and the releases of every
failing build have one and the same clear nearest name (flaghistory/nearest.py), becomes that name
(`--tool-call-parser-plugin x` → `--tool-parser-plugin x`, `--load-format safetensor` → `safetensors`,
`"num_spec_tokens"` → `"num_speculative_tokens"`).

The name is a guess from the spelling, not vLLM's word (a removal's replacement is): like every
candidate it is a fix only once the runner ran it at least as deep as the original on every build it
must run on (publisher/fixes.py `verified`); until then the command page says "Not verified" and the
docs keep their warning. Its `why` says it is the nearest name, so a reviewer knows what to look at.
"""

from __future__ import annotations

import re

from driftmatrix.flaghistory import nearest
from driftmatrix.flaghistory.commands import KEY_ERROR
from driftmatrix.flaghistory.history import FlagHistory, token
from driftmatrix.flaghistory.uses import Use

Edit = tuple[list[str], str]
"""([old, new] as publisher/fix_edits.py applies it, why in words)."""


def _one_name(history: FlagHistory, use: Use, versions: list[str]) -> str | None:
    """The clear nearest name every version's release agrees on; None when one has none or they differ
    (a fix must be the same text on every build)."""
    names = {nearest.clear(history, use, v) for v in versions}
    return names.pop() if len(names) == 1 and None not in names else None


def _why(use: Use, new: str, versions: list[str]) -> str:
    where = " and ".join(dict.fromkeys(f"vLLM {v}" for v in versions))
    return (
        f"{use.text()} is in no vLLM release read; the nearest name {where} "
        f"{'has' if len(versions) < 2 else 'have'} is {nearest.shown(use, new)} (a guess from its spelling: "
        "only the runs show it works)"
    )


def option_edit(history: FlagHistory, option: str, versions: list[str]) -> Edit | None:
    """An unknown option (as argparse names it, `--x` or `--x=v`) → its clear nearest name, value kept."""
    use = nearest.option_use(history, option)
    if use is None or not versions or nearest.known_anywhere(history, use):
        return None
    new = _one_name(history, use, versions)
    return ([use.written, new], _why(use, new, versions)) if new else None


def use_edit(history: FlagHistory, use: Use, argv: list[str], versions: list[str]) -> Edit | None:
    """A refused value or config key no release read has → its clear nearest name, where the command's
    text can be edited mechanically: the value after its option, the key of a dotted option
    (`--speculative-config.num_spec_tokens`), or a top-level JSON key written once (`"num_spec_tokens"`)."""
    if use.kind not in ("value", "key") or not versions or nearest.known_anywhere(history, use):
        return None
    new = _one_name(history, use, versions)
    if new is None:
        return None
    if use.kind == "value":
        if use.key:
            return None  # a value inside JSON: not a mechanical swap
        glue = "=" if f"{use.written}={use.value}" in argv else " "
        return [f"{use.written}{glue}{use.value}", f"{use.written}{glue}{new}"], _why(use, new, versions)
    if use.written.endswith("." + use.key):  # `--speculative-config.num_spec_tokens 4`
        return [use.written, use.written[: -len(use.key)] + new], _why(use, new, versions)
    quoted = f'"{use.key}"'
    if "." in use.key or sum(a.count(quoted) for a in argv) != 1:
        return None  # a nested key, or one written more than once: which to change is not known
    return [quoted, f'"{new}"'], _why(use, new, versions)


CONFIG_ERROR = re.compile(r"^\d+ validation errors? for (\w+)\n((?:\S+\n\s+.*\n?)+)", re.M)
"""pydantic's words when the engine config (not argparse) refuses a JSON option's keys: they name the
config class, not the option (vLLM 0.20.1's `SpeculativeConfig` at the config tier)."""


def config_keys(history: FlagHistory, message: str | None, argv: list[str]) -> list[Use]:
    """The keys no release read has that such a message names, as Uses of the command's option whose
    config class it names. Keys some release has are left to driftmatrix.flaghistory.commands.refused_uses: only
    a nearest name is read here."""
    given = {history.canonical(t.name): a.split("=", 1)[0] for a in argv if (t := token(a)) and not t.syntax}
    found = []
    for cls, errors in CONFIG_ERROR.findall(message or ""):
        options = [o for o, d in history.keys.items() if d.get("class") == cls and o in given]
        for key in KEY_ERROR.findall(errors) if len(options) == 1 else []:
            use = Use("key", options[0], given[options[0]], key=key)
            if not nearest.known_anywhere(history, use):
                found.append(use)
    return found
