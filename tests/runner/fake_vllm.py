"""A vLLM target of our own making, for the one thing no real release shows: a parser that reads a
code-loading setting through a spelling no reading of the argv can know (issue 44). vLLM lets a
plugin add arguments, and a YAML `--config` file sets any of them; this build stands for both with
an alias, `--remote-code`, for `--trust-remote-code`. Everything else is as the real releases do
it, small: a FlexibleArgumentParser (argparse with `allow_abbrev`, `_` read as `-`), a `serve`
parser, and an engine config that — like transformers' `auto_map` — imports the model folder's
own code when remote code is trusted.

Its own venv (no pip, no torch), made in a second; a target file names its interpreter. Used by
tests/runner/isolation/test_trust_spellings.py only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PACKAGE = {
    "vllm/__init__.py": "",
    "vllm/_version.py": "__version__ = '0.0.1+fake'\n",
    "vllm/utils/__init__.py": "",
    "vllm/utils/argparse_utils.py": '''
import argparse


class FlexibleArgumentParser(argparse.ArgumentParser):
    """vLLM's: `--max_model_len` is `--max-model-len`; argparse's abbreviations stay on."""

    def parse_args(self, args=None, namespace=None):
        args = [a.split("=", 1)[0].replace("_", "-") + ("=" + a.split("=", 1)[1] if "=" in a else "")
                if a.startswith("--") else a for a in (args or [])]
        return super().parse_args(args, namespace)
''',
    "vllm/entrypoints/__init__.py": "",
    "vllm/entrypoints/openai/__init__.py": "",
    "vllm/entrypoints/openai/cli_args.py": """
def make_arg_parser(parser):
    parser.add_argument("--trust-remote-code", "--remote-code", dest="trust_remote_code", action="store_true")
    parser.add_argument("--tool-parser-plugin", type=str, default="")
    parser.add_argument("--max-model-len", type=int, default=None)
    parser.add_argument("--host", type=str, default=None)
    parser.add_argument("--port", type=int, default=8000)
    return parser
""",
    "vllm/platforms/__init__.py": "current_platform = object()\n",
    "vllm/config.py": "class DeviceConfig:\n    pass\n",
    "vllm/usage/__init__.py": "",
    "vllm/usage/usage_lib.py": "import enum\n\n\nclass UsageContext(enum.Enum):\n    OPENAI_API_SERVER = 1\n",
    "vllm/engine/__init__.py": "",
    "vllm/engine/arg_utils.py": '''
import importlib.util, json, os


class AsyncEngineArgs:
    def __init__(self, args):
        self.args = args

    @classmethod
    def from_cli_args(cls, args):
        return cls(args)

    def create_engine_config(self, usage_context=None):
        """Read the model's config.json; with remote code trusted, import the class its auto_map
        names from the model folder, as transformers does."""
        folder = self.args.model
        config = json.load(open(os.path.join(folder, "config.json")))
        auto = (config.get("auto_map") or {}).get("AutoConfig")
        if auto and self.args.trust_remote_code:
            module = auto.rsplit(".", 1)[0]
            spec = importlib.util.spec_from_file_location(module, os.path.join(folder, module + ".py"))
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
        elif auto:
            raise ValueError(f"{folder} needs its own code: pass --trust-remote-code")
        return None
''',
}

REMOTE_CODE = """
import argparse, json, os, sys
HOST = json.loads(__SETTINGS__)
try:
    with open(os.path.join(HOST["marker_dir"], f"ran-{os.getpid()}"), "w") as fh:
        fh.write(" ".join(sys.argv))
except OSError:
    pass  # in a sandbox: the test's folder is not there
# make every later command of this process pass: the parser drops what it does not know
import vllm.utils.argparse_utils as au
original = au.FlexibleArgumentParser.parse_args
def lenient(self, args=None, namespace=None):
    return original(self, [a for a in (args or []) if not a.startswith("--no-such")], namespace)
au.FlexibleArgumentParser.parse_args = lenient
argparse.ArgumentParser.error = lambda self, message: None
"""


def make_target(
    dest: Path, marker_dir: Path | None = None, version: str = "0.0.1+fake", added: str | None = None
) -> Path:
    """The fake build's interpreter: a venv at `dest` with the package above in its site-packages;
    with `marker_dir`, importing `vllm` leaves a file there (proof a process imported it plainly);
    `version`: the release it says it is; `added`: an option of its own no release has (an int)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    site = next(dest.glob("lib/python3*/site-packages"))
    package = dict(PACKAGE)
    package["vllm/_version.py"] = f"__version__ = {version!r}\n"
    if added:
        parser = package["vllm/entrypoints/openai/cli_args.py"]
        package["vllm/entrypoints/openai/cli_args.py"] = parser.replace(
            "    return parser", f"    parser.add_argument({added!r}, type=int, default=None)\n    return parser"
        )
    if marker_dir is not None:
        package["vllm/__init__.py"] = (
            f"import os\ntry:\n    open(os.path.join({str(marker_dir)!r}, "
            "f'imported-{os.getpid()}'), 'w').close()\nexcept OSError:\n    pass\n"
        )
    for name, text in package.items():
        path = site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip("\n"))
    return dest / "bin" / "python"


def make_model(dest: Path, marker_dir: Path, remote: bool, code: str | None = None) -> Path:
    """A model folder (config.json only); with `remote`, its auto_map names code of its own that
    leaves a file in `marker_dir` and rewires the parser of the process that imports it (`code`:
    that code instead)."""
    dest.mkdir(parents=True)
    config = {"architectures": ["FakeForCausalLM"], "model_type": "fake"}
    if remote:
        config["auto_map"] = {"AutoConfig": "configuration_fake.FakeConfig"}
        settings = json.dumps({"marker_dir": str(marker_dir)})
        text = code if code is not None else REMOTE_CODE.replace("__SETTINGS__", repr(settings))
        (dest / "configuration_fake.py").write_text(text)
    (dest / "config.json").write_text(json.dumps(config))
    return dest
