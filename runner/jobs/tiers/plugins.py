"""Values a vLLM plugin registers (common/vllm_plugins.py), on a build without that plugin: not
decided here. A page written for a plugin (its site documents it, or it names it) may give
`--quantization inc` or a connector of the plugin's own: a stock build refusing it says nothing about
the docs (a false alarm), and one accepting it says nothing either — on the plugin's platform the
plugin's kernels run it. Such a command is judged for real only on a target whose `extra`
requirements install the plugin; elsewhere:

- a value no stock release knows (the option history), or an option none has (vllm-omni adds
  `--omni`), SKIPs the command before parsing: the stock parser would refuse it, the plugin gives it;
- a stock value of an option the platform decides (a quantization method, a cache dtype) is parsed,
  and config and deeper SKIP: what it does there is the plugin's.
"""

from __future__ import annotations

from driftmatrix.common import vllm_plugins
from driftmatrix.extractor.snippet_record import Snippet
from driftmatrix.flaghistory.commands import shipped
from driftmatrix.flaghistory.uses import uses_of
from driftmatrix.runner.builds.targets import Target


def _missing(names: list[str], target: Target) -> list[str]:
    """The plugins the target does not install (an unknown name — a VLLM_PLUGINS entry point — never is)."""
    missing = []
    for name in names:
        plugin = vllm_plugins.named(name)
        if plugin is None or not vllm_plugins.installed(plugin, target.extra):
            missing.append(name)
    return missing


def _stock(option: str, value: str) -> bool | None:
    """Whether any stock vLLM release has the value (None: the history does not read the option's values)."""
    history = shipped()
    record = (history.values.get(option) if history else None) or {}
    known = record.get("values")
    return None if not known else value in known


def _foreign_options(argv: list[str]) -> list[str]:
    """The options no stock release has (the option history), as the command gives them."""
    history = shipped()
    if history is None:
        return []
    return [u.written for u in uses_of(history, argv) if u.kind == "option" and history.record(u.written) is None]


def refusal(snippet: Snippet, argv: list[str], target: Target) -> tuple[str, str] | None:
    """(the tier from which the command is not decided here — `parse` or `config` —, why), or None."""
    missing = _missing(vllm_plugins.plugins_of(snippet), target)
    if not missing:
        return None
    who = ", ".join(missing)
    needs = [p.hardware for name in missing if (p := vllm_plugins.named(name)) and p.hardware]
    where = f" on {' / '.join(needs)}" if needs else ""
    given = vllm_plugins.values_in(argv)
    unknown = [f"{o.replace('.', ' ')} {v}" for o, v in given if _stock(o, v) is not True]
    foreign = _foreign_options(argv)
    if unknown or foreign:
        how = [vllm_plugins.PLUGIN_OPTIONS[o][0] for o, v in given if _stock(o, v) is not True][:1] or [
            "a plugin may add `vllm serve` options: vllm-omni's --omni"
        ]
        return "parse", (
            f"registered by a plugin ({who}): {', '.join(foreign + unknown)} is not in stock vLLM "
            f"({how[0]}); not decided by a build without the plugin — a target that installs it "
            f"judges it{where}"
        )
    platform = [(o, v) for o, v in given if vllm_plugins.PLUGIN_OPTIONS[o][1]]
    if not platform:
        return None
    what = ", ".join(f"{o} {v}" for o, v in platform)
    return "config", (
        f"registered by a plugin ({who}): on its platform the plugin runs {what} "
        f"({vllm_plugins.PLUGIN_OPTIONS[platform[0][0]][0]}); a build without the plugin decides "
        f"only the parsing — a target that installs it judges the rest{where}"
    )
