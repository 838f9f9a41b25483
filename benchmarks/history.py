"""Issue 16's speed figures for `driftmatrix history`: every release from 0.6.0, first with an
empty cache (downloads included), then from the cache; and the size of the written file.

    .venv/bin/python benchmarks/history.py [--keep-cache DIR]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from driftmatrix.flaghistory.build import build


def timed(cache: Path) -> tuple[float, dict]:
    started = time.monotonic()
    history = build(cache)
    return time.monotonic() - started, history


with tempfile.TemporaryDirectory() as tmp:
    cache = Path(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] == "--keep-cache" else Path(tmp)
    cold, history = timed(cache)
    warm, _ = timed(cache)
    out = Path(tmp) / "flag-history.json"
    out.write_text(json.dumps(history, indent=1) + "\n")
    kept = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    print(
        f"{len(history['releases'])} releases read, {len(history['diagnostics'])} with diagnostics, "
        f"{len(history['flags'])} options"
    )
    values, keys = history.get("values", {}), history.get("keys", {})  # issue 34
    kinds: dict[str, int] = {}
    for domain in values.values():
        kinds[domain["from"]] = kinds.get(domain["from"], 0) + 1
    print(
        f"values of {len(values)} options ({', '.join(f'{n} from {k}' for k, n in sorted(kinds.items()))}), "
        f"{sum(len(d['values']) for d in values.values())} value names; keys of {len(keys)} JSON options, "
        f"{sum(len(k['keys']) for k in keys.values())} keys"
    )
    print(f"first time (empty cache, downloads included): {cold:.1f} s")
    print(f"from the cache: {warm:.2f} s")
    print(f"flag-history.json: {out.stat().st_size / 1024:.0f} KiB; cache kept: {kept / 2**20:.0f} MiB")
