"""The argparse types of `driftmatrix run` and `plan`: the variants to run, a number above 0, the CI
job's start time, the device a CUDA build's config tier is built over."""

from __future__ import annotations

import argparse


def variant_list(text: str) -> list[str]:
    from driftmatrix.runner.argv.edit import VARIANTS

    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in names if v not in VARIANTS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown variant(s) {', '.join(bad) or text!r}; known: {', '.join(VARIANTS)}")
    return names


def positive(kind):
    """An argparse type: a number of `kind` above 0."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"a {'whole ' if kind is int else ''}number above 0, got {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its own messages
    return parse


def job_start(text: str) -> float:
    """`--started-at`: Unix seconds, not in the future (runner/run/deadline.py)."""
    from driftmatrix.runner.run.deadline import started_at_error

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time in Unix seconds (`date +%s`): {text!r}") from None
    if why := started_at_error(value):
        raise argparse.ArgumentTypeError(why)
    return value


def declared_device(text: str) -> dict | None:
    """`9.0`, `9.0,140` or `9.0,140,8` (capability, GiB per GPU, GPUs), or `none`."""
    from driftmatrix.runner.settings import DECLARED_DEVICE

    if text.strip().lower() in ("none", "off", "no"):
        return None
    parts = [p.strip() for p in text.split(",")]
    try:
        major, _, minor = parts[0].partition(".")
        int(major), int(minor or 0)
        decl = {**DECLARED_DEVICE, "capability": parts[0]}
        if parts[0] != DECLARED_DEVICE["capability"]:
            decl["name"] = f"declared CUDA {parts[0]} device"
        if len(parts) > 1:
            decl["memory_gib"] = float(parts[1])
        if len(parts) > 2:
            decl["count"] = int(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not CAPABILITY[,GIB[,COUNT]]: {text!r}") from None
    if len(parts) > 3:
        raise argparse.ArgumentTypeError(f"not CAPABILITY[,GIB[,COUNT]]: {text!r}")
    return decl
