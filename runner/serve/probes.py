"""Probes: real OpenAI-API requests against one running server.

Each probe is judged on what the *server* did (status, protocol, grammar-forced shape),
not on what a random-weight model says.  json_schema runs right after /v1/models,
before anything else: a real case crashed the engine on its first such request.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from driftmatrix.runner.settings import PROBE_BODY_BYTES, PROBE_READ_S, PROBE_REQUEST_S, PROBE_TOTAL_S

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
SPEC_COUNTERS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")


@dataclass
class ProbeContext:
    base: str
    """`http://127.0.0.1:PORT`"""
    model: str
    """The served model name, from /v1/models."""
    alive: Callable[[], bool]
    """Whether the server process is still running."""


def _png(size: int = 32) -> str:
    """A small solid-colour PNG, built here so no image file is needed."""
    row = b"\x00" + bytes([200, 30, 30]) * size
    raw = zlib.compress(row * size)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", raw)
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


class ProbeDeadline(httpx.HTTPError):
    """A response took longer than its deadline, or was larger than PROBE_BODY_BYTES: a server that
    answers byte by byte, or floods, cannot hold the run."""


@dataclass
class Reply:
    """A whole response, read within its deadline and size."""

    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")

    def json(self):
        return json.loads(self.content)


def fetch(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    json_body=None,
    deadline_s: float = PROBE_REQUEST_S,
) -> Reply:
    """One request read to its end within `deadline_s` and PROBE_BODY_BYTES (httpx's own timeouts bound
    each wait for bytes, not the whole response)."""
    end = time.monotonic() + deadline_s
    body = bytearray()
    with client.stream(method, url, json=json_body) as r:
        for chunk in r.iter_bytes():
            body += chunk
            if len(body) > PROBE_BODY_BYTES:
                raise ProbeDeadline(f"response larger than {PROBE_BODY_BYTES} bytes")
            if time.monotonic() > end:
                raise ProbeDeadline(f"response not complete within {deadline_s:.0f} s")
        return Reply(r.status_code, bytes(body))


def _body(resp: Reply, limit: int = 600) -> str:
    return resp.text[:limit]


def _chat(ctx: ProbeContext, client: httpx.Client, **extra) -> Reply:
    payload = {
        "model": ctx.model,
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 16,
        "temperature": 0,
    } | extra
    return fetch(client, "POST", f"{ctx.base}/v1/chat/completions", json_body=payload)


def probe_models(ctx: ProbeContext, client: httpx.Client) -> dict:
    r = fetch(client, "GET", f"{ctx.base}/v1/models")
    ids = [m.get("id") for m in r.json().get("data", [])] if r.status_code == 200 else []
    if ids:
        ctx.model = ids[0]
    return {"ok": r.status_code == 200 and bool(ids), "status": r.status_code, "detail": {"models": ids}}


def probe_json_schema(ctx: ProbeContext, client: httpx.Client) -> dict:
    r = _chat(
        ctx,
        client,
        max_tokens=48,
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}},
    )
    if r.status_code != 200:
        return {"ok": False, "status": r.status_code, "detail": {"body": _body(r)}}
    data = r.json()
    detail = schema_shape(data["choices"][0]["message"], (data.get("usage") or {}).get("completion_tokens") or 0)
    ok = (detail.get("starts_as_object", False) or detail.get("shape_checked") is False) and ctx.alive()
    return {"ok": ok, "status": r.status_code, "detail": detail}


REASONING_OPENERS = ("<|channel|>analysis", "<|channel|>commentary", "<think>")
"""How a raw answer opens when it is still reasoning: vLLM applies a json_schema grammar to the answer
after the reasoning ends (harmony's final channel, after `</think>`)."""


def schema_shape(message: dict, generated: int) -> dict:
    """What a json_schema answer shows of its shape: a grammar-constrained answer starts as a JSON object
    (whether a random model finishes it within max_tokens is not the server's fault); `shape_checked`
    False where the answer cannot show it."""
    content = message.get("content") or ""
    detail: dict = {"content": content[:200]}
    thought = message.get("reasoning_content") or message.get("reasoning") or ""
    if content.lstrip().startswith(REASONING_OPENERS):
        # the raw answer is still in its reasoning channel (gpt-oss's harmony `<|channel|>analysis`,
        # served without a reasoning parser): the grammar applies to the final answer after it
        detail.update(
            shape_checked=False,
            why="the answer is still in its reasoning channel; the schema applies to the final answer after it",
        )
        return detail
    if not content and (thought or generated):
        # With a reasoning parser the grammar applies once the reasoning ends; a random-weight model
        # may never end it within max_tokens, or emit only tokens the server does not show (special
        # tokens, skipped): the shape cannot be seen, the server answered.
        detail.update(
            reasoning=thought[:200],
            shape_checked=False,
            completion_tokens=generated,
            why="all tokens went to the reasoning; the schema applies after it ends"
            if thought
            else "every generated token is one the server does not show (a special token, "
            "outside the grammar until a reasoning parser sees the reasoning end)",
        )
        return detail
    detail["starts_as_object"] = content.lstrip().startswith("{")
    try:
        detail["valid_json"] = isinstance(json.loads(content), dict)
    except ValueError:
        detail["valid_json"] = False
    return detail


def probe_chat(ctx: ProbeContext, client: httpx.Client) -> dict:
    r = _chat(ctx, client)
    detail: dict = {}
    if r.status_code == 200:
        data = r.json()
        detail = {
            "finish_reason": data["choices"][0].get("finish_reason"),
            "completion_tokens": data.get("usage", {}).get("completion_tokens"),
        }
    else:
        detail = {"body": _body(r)}
    return {
        "ok": r.status_code == 200 and bool(detail.get("completion_tokens")),
        "status": r.status_code,
        "detail": detail,
    }


def probe_stream(ctx: ProbeContext, client: httpx.Client) -> dict:
    payload = {
        "model": ctx.model,
        "messages": [{"role": "user", "content": "Count."}],
        "max_tokens": 16,
        "temperature": 0,
        "stream": True,
    }
    chunks, done, status, size = 0, False, 0, 0
    end = time.monotonic() + PROBE_REQUEST_S
    with client.stream("POST", f"{ctx.base}/v1/chat/completions", json=payload) as r:
        status = r.status_code
        for line in r.iter_lines():
            size += len(line)
            if time.monotonic() > end or size > PROBE_BODY_BYTES:
                raise ProbeDeadline(f"stream not complete within {PROBE_REQUEST_S:.0f} s / {PROBE_BODY_BYTES} bytes")
            if line.startswith("data: "):
                if line[6:].strip() == "[DONE]":
                    done = True
                else:
                    chunks += 1
    return {"ok": status == 200 and chunks > 0 and done, "status": status, "detail": {"chunks": chunks, "done": done}}


def probe_tool_call(ctx: ProbeContext, client: httpx.Client) -> dict:
    r = _chat(
        ctx,
        client,
        max_tokens=64,
        tools=[TOOL],
        tool_choice="auto",
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
    )
    detail: dict = {"body": _body(r)} if r.status_code != 200 else {}
    if r.status_code == 200:
        msg = r.json()["choices"][0]["message"]
        detail = {"tool_calls": len(msg.get("tool_calls") or []), "content": (msg.get("content") or "")[:120]}
    # The server accepted tools with auto tool choice and answered: the parser is wired.
    return {"ok": r.status_code == 200 and ctx.alive(), "status": r.status_code, "detail": detail}


NO_IMAGE_INPUT = re.compile(r"At most 0 image\(s\) may be provided")
"""vLLM's answer to an image for a model without image input (an audio-only model)."""


def refuses_images(status: int, body: str) -> bool:
    """vLLM answered that the served model takes no image at all: the image probe does not apply."""
    return status == 400 and bool(NO_IMAGE_INPUT.search(body))


def probe_image(ctx: ProbeContext, client: httpx.Client) -> dict:
    content = [
        {"type": "text", "text": "What colour is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_png()}"}},
    ]
    r = _chat(ctx, client, messages=[{"role": "user", "content": content}])
    detail = (
        {"prompt_tokens": r.json().get("usage", {}).get("prompt_tokens")}
        if r.status_code == 200
        else {"body": _body(r)}
    )
    if refuses_images(r.status_code, r.text):
        detail.update(applicable=False, why="the served model takes no image input (vLLM's own answer)")
        return {"ok": ctx.alive(), "status": r.status_code, "detail": detail}
    return {"ok": r.status_code == 200, "status": r.status_code, "detail": detail}


def spec_decode_metrics(base: str, client: httpx.Client) -> dict[str, float] | None:
    r = fetch(client, "GET", f"{base}/metrics")
    if r.status_code != 200:
        return None
    out: dict[str, float] = {}
    for line in r.text.splitlines():
        if line.startswith("vllm:spec_decode_"):
            name, _, value = line.rpartition(" ")
            key = name.split("{")[0][len("vllm:spec_decode_") :].removesuffix("_total")
            if key in SPEC_COUNTERS:
                out[key] = out.get(key, 0.0) + float(value)
    return out or None


def plan(tool_flags: bool, multimodal: bool) -> list[tuple[str, Callable]]:
    """The probes for one server, in order: json_schema immediately after /v1/models."""
    steps = [
        ("models", probe_models),
        ("json_schema", probe_json_schema),
        ("chat", probe_chat),
        ("stream", probe_stream),
    ]
    if tool_flags:
        steps.append(("tool_call", probe_tool_call))
    if multimodal:
        steps.append(("image", probe_image))
    return steps


def run(
    ctx: ProbeContext,
    tool_flags: bool,
    multimodal: bool,
    spec: bool,
    timeout: float = PROBE_READ_S,
    api_key: str | None = None,
    total_s: float = PROBE_TOTAL_S,
) -> tuple[list[dict], dict | None]:
    """The probes in order, each within PROBE_REQUEST_S, all within `total_s`; `timeout` bounds each
    wait for bytes."""
    results = []
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    end = time.monotonic() + total_s
    with httpx.Client(timeout=timeout, headers=headers) as client:
        for name, fn in plan(tool_flags, multimodal):
            if time.monotonic() > end:
                results.append(
                    {
                        "name": name,
                        "ok": False,
                        "status": None,
                        "duration_s": 0.0,
                        "detail": {"error": f"not run: the probes' deadline of {total_s:.0f} s had passed"},
                    }
                )
                break
            t0 = time.monotonic()
            try:
                res = fn(ctx, client)
            except (httpx.HTTPError, ValueError, KeyError, IndexError) as err:
                res = {"ok": False, "status": None, "detail": {"error": f"{type(err).__name__}: {err}"[:500]}}
            res = {"name": name, **res, "duration_s": round(time.monotonic() - t0, 2)}
            results.append(res)
            if not ctx.alive():
                res["ok"] = False
                res.setdefault("detail", {})["server_exited"] = True
                break
        metrics = None
        if spec and ctx.alive():
            try:
                metrics = spec_decode_metrics(ctx.base, client)
            except httpx.HTTPError:
                metrics = None
    return results, metrics
