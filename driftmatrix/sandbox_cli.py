"""`driftmatrix sandbox`: whether code from the docs runs contained on this machine, and with what
limits; `--check` makes "not contained" a non-zero exit (the workflows run it before any step that
runs docs code). Also the `--unsandboxed` option that run, pipeline and gate share."""

from __future__ import annotations

import argparse


def add_unsandboxed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--unsandboxed",
        action="store_true",
        help="run code from the docs as plain processes even where no sandbox is available "
        "(also `--trust-remote-code` commands); recorded on every outcome and shown on the site",
    )


def apply_unsandboxed(args: argparse.Namespace) -> None:
    if getattr(args, "unsandboxed", False):
        from driftmatrix.runner.isolation.sandbox import detection

        detection.set_mode("off", "--unsandboxed")


def banner() -> str:
    """One line for the start and end of a run: contained or not, and how to get it."""
    from driftmatrix.runner.isolation.sandbox import detection

    if detection.active():
        return f"contained: code from the docs runs in a sandbox ({detection.describe()})"
    chosen, why = detection.mode()
    if chosen == "required":
        return (
            f"NOT contained, and a sandbox is required ({why}): nothing from the docs runs — no environment "
            "query, stand-in build, option-history query, parse/config helper or server starts as a plain process "
            f"({detection.describe()}); {detection.how_to_get()}"
        )
    get = "" if chosen == "off" else f"; {detection.how_to_get()}"
    return (
        f"NOT contained: vLLM runs as plain processes ({detection.describe()}), so only commands known to be "
        f"inert run past argparse (no path, module, plugin or remote code: docs/guide/security.md){get}"
        if chosen != "off"
        else f"NOT contained, by request: code from the docs runs as plain processes ({detection.describe()})"
    )


def cmd_sandbox(args: argparse.Namespace) -> int:
    from driftmatrix.runner.isolation.sandbox import detection
    from driftmatrix.runner.isolation.sandbox.limits import for_kind

    print(banner())
    if detection.active():
        print(f"limits per server: {for_kind('server').describe()}")
        print(
            "visible inside: /usr, a few files of /etc, the target's Python, driftmatrix's runner/intarget/, "
            "the job's models; private /tmp and /dev/shm; no /run, no home, no network but loopback"
        )
    if args.check and not detection.active():
        return 1
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("sandbox", help="is code from the docs contained here? (bubblewrap, limits)")
    p.add_argument("--check", action="store_true", help="exit 1 when it is not")
    p.set_defaults(func=cmd_sandbox)
