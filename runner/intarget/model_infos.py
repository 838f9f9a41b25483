"""vLLM's own inspection of every architecture it ships, written where vLLM keeps it, in one process.

Run by a target's Python (`-I`, by path, in the sandbox) by runner/serve/model_infos.py, with the
folder to write into as its argument; it runs nothing of the docs. vLLM learns what an architecture
supports by importing its module in a fresh process (`_run_in_subprocess` in
vllm/model_executor/models/registry.py, to keep CUDA uninitialised in the caller) unless
VLLM_CACHE_ROOT/modelinfos holds the answer for that module's source hash; here the same
`inspect_model_cls` runs for each built-in architecture with the subprocess replaced by a plain call
(this process is thrown away), so vLLM itself computes, keys and writes every file. Plugins are
loaded first, as vLLM's subprocess does. An architecture whose module fails to import is left out:
vLLM inspects it itself later, as before. Prints one JSON line: how many were inspected and failed.
"""

import json
import os
import sys

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

from .vllm_symbols import find  # next to this file

BUILT_IN = "vllm.model_executor.models."


def main(out):
    os.environ["VLLM_CACHE_ROOT"] = out  # read by vllm.envs when the cache is written, not at import
    registry = find("models_registry")
    lazy = getattr(registry, "_LazyRegisteredModel", None) if registry is not None else None
    if lazy is None or not hasattr(registry, "_run_in_subprocess") or not hasattr(lazy, "_save_modelinfo_to_cache"):
        return {"inspected": 0, "failed": 0, "why": "this release keeps no inspections between processes"}
    load_plugins = find("load_general_plugins")
    if load_plugins is not None:
        load_plugins()
    registry._run_in_subprocess = lambda fn: fn()
    inspected, failed = 0, 0
    for model in list(registry.ModelRegistry.models.values()):
        if not isinstance(model, lazy) or not model.module_name.startswith(BUILT_IN):
            continue
        try:
            model.inspect_model_cls()
            inspected += 1
        except Exception:  # its module does not import here (a missing optional dependency)
            failed += 1
    return {"inspected": inspected, "failed": failed}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])), flush=True)
