"""vLLM's plugins, and the values they may register: one place for the extractor (which plugin a
page is written for), the runner (a value a build without the plugin cannot decide: SKIP) and the
option history's words ("registered by a plugin, cannot say").

vLLM loads plugins through entry points (`vllm.platform_plugins`: a hardware platform such as
Intel Gaudi's HPU or Google's TPU; `vllm.general_plugins`: anything else). A plugin may register
values of these options (vLLM's own mechanism in brackets), so a page written for a plugin can name
a value no stock vLLM build knows, and a value stock vLLM knows may mean something else on the
plugin's platform; a plugin may even add `vllm serve` options (vllm-omni's `--omni`). A build
without the plugin decides none of it: only a target that installs the plugin (its `extra`
requirements name the plugin's package) judges such a command past parsing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

PLUGIN_OPTIONS: dict[str, tuple[str, bool]] = {
    "--quantization": ("register_quantization_config; the platform's supported_quantization", True),
    "--kv-cache-dtype": ("the platform's cache dtypes (fp8_inc: the HPU's)", True),
    "--device": ("a platform plugin (vllm.platform_plugins)", True),
    "--attention-backend": ("the attention backend registry (register_backend)", True),
    "--distributed-executor-backend": ("the platform's executor", True),
    "--kv-transfer-config.kv_connector": ("KVConnectorFactory.register_connector", False),
    "--tool-call-parser": ("ToolParserManager.register_module (--tool-parser-plugin)", False),
    "--reasoning-parser": ("ReasoningParserManager.register_module", False),
}
"""Options whose values a plugin may register: (the mechanism vLLM gives it, whether the platform
decides what even a stock value does — a quantization method or cache dtype on the HPU is the
plugin's kernels, not the CPU build's)."""


@dataclass(frozen=True)
class Plugin:
    name: str
    """How its project calls itself: `vllm-gaudi`."""
    package: str
    """Its package on PyPI (what a targets file's `extra` installs)."""
    repositories: tuple[str, ...]
    """Its GitHub `owner/name` (a site's `repo_url` names it)."""
    words: tuple[str, ...]
    """What names it on a page (an install line, its import name, its product name)."""
    hardware: str = ""
    """The hardware it needs, when it is a platform plugin: a build on other hardware cannot load it."""
    images: tuple[str, ...] = ()
    """Container images that carry it (`vllm/vllm-tpu`): a command in one is written for it."""
    options: tuple[str, ...] = ()
    """`vllm serve` options it adds (vllm-omni's `--omni`): a command that gives one is written for it."""


KNOWN: tuple[Plugin, ...] = (
    Plugin(
        "vllm-gaudi",
        "vllm-gaudi",
        ("vllm-project/vllm-gaudi",),
        ("vllm-gaudi", "vllm_gaudi", "Hardware Plugin for Intel® Gaudi"),
        "Intel Gaudi (HPU)",
        ("vault.habana.ai/gaudi-docker", "habanalabs/vllm"),
    ),
    Plugin(
        "tpu-inference",
        "tpu-inference",
        ("vllm-project/tpu-inference",),
        ("tpu-inference", "tpu_inference", "vllm-tpu"),
        "Google TPU",
        ("vllm/vllm-tpu",),
    ),
    Plugin(
        "vllm-ascend",
        "vllm-ascend",
        ("vllm-project/vllm-ascend",),
        ("vllm-ascend", "vllm_ascend"),
        "Huawei Ascend (NPU)",
        ("quay.io/ascend/vllm-ascend",),
    ),
    Plugin("vllm-spyre", "vllm-spyre", ("vllm-project/vllm-spyre",), ("vllm-spyre", "vllm_spyre"), "IBM Spyre"),
    Plugin("vllm-neuron", "vllm-neuron", ("vllm-project/vllm-neuron",), ("vllm-neuron", "vllm_neuron"), "AWS Neuron"),
    Plugin(
        "vllm-omni",
        "vllm-omni",
        ("vllm-project/vllm-omni",),
        ("vllm-omni", "vllm_omni"),
        "",
        ("vllm/vllm-omni",),
        ("--omni",),
    ),
    Plugin("vllm-rbln", "vllm-rbln", ("rebellions-sw/vllm-rbln",), ("vllm-rbln", "vllm_rbln"), "Rebellions NPU"),
    Plugin("vllm-metal", "vllm-metal", ("vllm-project/vllm-metal",), ("vllm-metal", "vllm_metal"), "Apple silicon"),
)
_BY_NAME = {p.name: p for p in KNOWN}
INSTALL = re.compile(r"\b(?:pip3?|uv\s+pip|uv|pipx|poetry)\s+(?:install|add)\b", re.I)
"""An install command (pip, uv, pipx, poetry): the one reading of "this line installs packages"
(extractor/written_for.py reads the vLLM version from such a line, of_install the plugin)."""
_REPO = re.compile(r"github\.com[/:]([\w.-]+/[\w.-]+?)(?:\.git)?/?$", re.I)


def named(name: str) -> Plugin | None:
    return _BY_NAME.get(name)


def of_repository(repo_url: str) -> Plugin | None:
    """The plugin whose repository a site's `repo_url` is."""
    m = _REPO.search(repo_url.strip())
    slug = m.group(1).lower() if m else ""
    return next((p for p in KNOWN if slug in (r.lower() for r in p.repositories)), None)


def of_text(text: str) -> Plugin | None:
    """The plugin a page names (an install line, its import, its product name), first in KNOWN order."""
    return next((p for p in KNOWN if any(w in text for w in p.words)), None)


def of_install(text: str) -> Plugin | None:
    """The plugin a page installs (`pip install vllm-gaudi`, `uv pip install tpu-inference`): a page that
    only mentions one (a recipe's table of hardware, a list of plugins) is not written for it."""
    for m in INSTALL.finditer(text):
        end = text.find("\n", m.start())
        line = text[m.start() : end if end >= 0 else None]
        found = next((p for p in KNOWN if re.search(rf"(?<![\w-]){re.escape(p.package)}(?![\w-])", line)), None)
        if found:
            return found
    return None


def of_image(image: str | None) -> Plugin | None:
    """The plugin a container image carries (`vllm/vllm-tpu:nightly`)."""
    return next((p for p in KNOWN if image and any(image.startswith(i) for i in p.images)), None) if image else None


_RUN = re.compile(r"\b(?:docker|podman)\s+(?:container\s+)?run\b(?:\\\n|[^\n])*")
_ASSIGNED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=[\"']?([\w./:@-]+)")


def of_run(text: str) -> Plugin | None:
    """The plugin whose image a page runs (`docker run … quay.io/ascend/vllm-ascend:v0.9.1 bash`, continued
    lines included; `docker run … $IMAGE` of an `IMAGE=…` the page sets): the commands it then shows run
    inside that container. A page that only names an image (a table of images) is not written for it."""
    if "docker" not in text and "podman" not in text:
        return None
    runs = [m.group(0) for m in _RUN.finditer(text)]
    if not runs:
        return None
    names = {m.group(1): m.group(2) for m in _ASSIGNED.finditer(text) if of_image(m.group(2))}
    for run in runs:
        words = run.replace("\\\n", " ").split()
        for word in words:
            word = word.strip("\"'")
            var = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", word)
            found = of_image(names.get(var.group(1)) if var else word)
            if found:
                return found
    return None


def of_options(argv: list[str]) -> Plugin | None:
    """The plugin whose own `vllm serve` option the command gives (`--omni`)."""
    given = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    return next((p for p in KNOWN if given & set(p.options)), None)


def of_env(env: dict[str, str]) -> str | None:
    """`VLLM_PLUGINS=…` in front of a command: it loads a plugin by its entry point's name."""
    value = env.get("VLLM_PLUGINS", "").strip()
    return value or None


def installed(plugin: Plugin, requirements: list[str]) -> bool:
    """A target installs the plugin: its extra requirements name the plugin's package."""
    want = canonicalize_name(plugin.package)
    for req in requirements:
        try:
            if canonicalize_name(Requirement(req).name) == want:
                return True
        except InvalidRequirement:
            continue
    return False


def values_in(argv: list[str]) -> list[tuple[str, str]]:
    """(option, value) for each plugin-registrable value the command gives (argv spelled as vLLM's
    parser reads it: `--opt value`, `--opt=value`, a JSON config's key)."""
    found = []
    for i, word in enumerate(argv):
        option, eq, inline = word.partition("=")
        value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        if option in PLUGIN_OPTIONS and value and not value.startswith("-"):
            found.append((option, value))
        elif option == "--kv-transfer-config" and value:
            connector = _json_key(value, "kv_connector")
            if connector:
                found.append(("--kv-transfer-config.kv_connector", connector))
    return found


def _json_key(value: str, key: str) -> str | None:
    try:
        data = json.loads(value)
    except ValueError:
        return None
    got = data.get(key) if isinstance(data, dict) else None
    return got if isinstance(got, str) else None


def plugins_of(snippet) -> list[str]:
    """The plugins a command's pages are written for (extractor/snippet_record.py Source.plugin), that its
    own `VLLM_PLUGINS=` loads, or whose own option it gives (`--omni`)."""
    named = [s.plugin for s in snippet.sources if getattr(s, "plugin", "")]
    env = of_env(snippet.env or {})
    own = of_options(snippet.argv or [])
    return list(dict.fromkeys(named + ([env] if env else []) + ([own.name] if own else [])))


def added_option(kind: str, known: bool, plugins: list[str]) -> str | None:
    """For an option (the option history's use: kind `option`) no stock release has, on a command written
    for a plugin: the words "an option a plugin may add …, cannot say"; None for anything else."""
    if not plugins or kind != "option" or known:
        return None
    return (
        f"not an option of stock vLLM: a plugin ({', '.join(plugins)}) may add it (vllm-omni adds --omni); "
        "stock vLLM's history cannot say"
    )


def registered_value(kind: str, domain: str, plugins: list[str]) -> str | None:
    """For a value (the option history's use: kind `value`, its option) a plugin the page is written
    for may register: the words "registered by a plugin …, cannot say"; None for anything else."""
    if not plugins or kind != "value" or domain not in PLUGIN_OPTIONS:
        return None
    return (
        f"registered by a plugin ({', '.join(plugins)}) through {PLUGIN_OPTIONS[domain][0]}: "
        "stock vLLM's history cannot say"
    )
