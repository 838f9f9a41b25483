"""The perf tier: decode speed of a started server, one stream and N concurrent streams.

Each request is a streamed chat completion, greedy (`temperature` 0), `ignore_eos` so every
stream decodes exactly `max_tokens` tokens (random weights would otherwise stop anywhere).
Per stream: time to the first token, and decode speed = (tokens - 1) / (last - first token
time).  Per run: total output tokens / wall time of the whole batch (what a server delivers).
The spec-decode counters are read before and after, so the acceptance during *these* requests
is known (on random weights a separate draft is never accepted; the self-speculation variant
— the target as its own draft — gives the upper bound).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time

import httpx

from driftmatrix.runner.serve.probes import fetch, spec_decode_metrics
from driftmatrix.runner.settings import PERF_REQUEST_S

PROMPT = "Tell a long story about a lighthouse keeper and the ships that pass in the night."


async def _stream(client: httpx.AsyncClient, url: str, model: str, max_tokens: int) -> dict:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    start = time.monotonic()
    first = last = None
    tokens = 0
    async with client.stream("POST", url, json=body) as r:
        if r.status_code != 200:
            return {"ok": False, "status": r.status_code}
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"].get("completion_tokens") or tokens
            if chunk.get("choices") and (chunk["choices"][0].get("delta") or {}).get("content"):
                now = time.monotonic()
                first = first or now
                last = now
    if first is None:
        return {"ok": False, "status": 200, "tokens": tokens}
    decode = (tokens - 1) / (last - first) if tokens > 1 and last > first else None
    return {"ok": True, "tokens": tokens, "ttft_s": first - start, "decode_tok_s": decode, "end": last, "start": start}


async def _batch(base: str, model: str, streams: int, max_tokens: int, headers: dict, timeout: float) -> dict:
    """`streams` streams at once, the whole batch within `timeout` (a server that answers byte by byte
    cannot hold the run: what did not finish by then is an error of the batch)."""
    async with httpx.AsyncClient(timeout=min(timeout, 60.0), headers=headers) as client:
        t0 = time.monotonic()
        tasks = [
            asyncio.ensure_future(_stream(client, f"{base}/v1/chat/completions", model, max_tokens))
            for _ in range(streams)
        ]
        _, late = await asyncio.wait(tasks, timeout=timeout)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        results = [
            TimeoutError(f"not finished within the batch's {timeout:.0f} s")
            if task in late
            else task.exception() or task.result()
            for task in tasks
        ]
    done = [r for r in results if isinstance(r, dict) and r.get("ok")]
    errors = [
        f"{type(r).__name__}: {r}"[:200] if isinstance(r, BaseException) else f"HTTP {r.get('status')}"
        for r in results
        if not (isinstance(r, dict) and r.get("ok"))
    ]
    out: dict = {"streams": streams, "max_tokens": max_tokens, "completed": len(done), "errors": errors[:3]}
    if done:
        wall = max(r["end"] for r in done) - t0
        speeds = [r["decode_tok_s"] for r in done if r["decode_tok_s"]]
        out.update(
            tokens=sum(r["tokens"] for r in done),
            wall_s=round(wall, 3),
            throughput_tok_s=round(sum(r["tokens"] for r in done) / wall, 2),
            decode_tok_s_median=round(statistics.median(speeds), 2) if speeds else None,
            ttft_s_median=round(statistics.median(r["ttft_s"] for r in done), 3),
        )
    return out


def _delta(before: dict | None, after: dict | None) -> dict | None:
    if not after:
        return None
    d = {k: after[k] - (before or {}).get(k, 0.0) for k in after}
    if d.get("num_draft_tokens"):
        d["acceptance_rate"] = round(d.get("num_accepted_tokens", 0.0) / d["num_draft_tokens"], 4)
    return d


def measure(
    base: str,
    *,
    concurrency: int = 16,
    max_tokens: int = 256,
    api_key: str | None = None,
    timeout: float = PERF_REQUEST_S,
) -> dict:
    """{single, concurrent, spec_decode (counter deltas during the runs)} for the server at `base`."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(timeout=30, headers=headers) as client:
        model = fetch(client, "GET", f"{base}/v1/models").json()["data"][0]["id"]
        before = spec_decode_metrics(base, client)
        # one short warm-up request, so compilation/first-use costs are not in the figures
        asyncio.run(_batch(base, model, 1, 8, headers, timeout))
        single = asyncio.run(_batch(base, model, 1, max_tokens, headers, timeout))
        concurrent = asyncio.run(_batch(base, model, concurrency, max_tokens, headers, timeout))
        after = spec_decode_metrics(base, client)
    return {"single": single, "concurrent": concurrent, "spec_decode": _delta(before, after)}
