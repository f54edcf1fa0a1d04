"""A small scripted OpenAI-compatible HTTP server for tests and benchmarks.

It serves `POST /v1/chat/completions` and `GET /v1/models` on 127.0.0.1. Each reply
comes from a script: a function of the request body that returns a `Reply` (content,
tool calls, usage, delay, an HTTP error status, headers, or a raw body to simulate a
broken response, or a body sent in slow pieces). A request with `"stream": true` gets the
reply as server-sent events. Every request is recorded in `server.requests`.

    with ScriptedOpenAI(lambda body: Reply(content="42")) as server:
        litellm.completion(model="openai/x", api_base=server.base_url, api_key="k", messages=...)

`Faults` wraps a script and injects provider faults into a seeded share of the requests:
429s with Retry-After, 500s, timeouts (the server sleeps past the client's timeout),
truncated JSON bodies, and slow streams (the body, or the stream's chunks, trickle out with
pauses each shorter than the client's timeout, the whole much longer). Whether and which
fault a request gets depends only on the seed, the request's model and last user message,
and how many times that pair was asked before, so a run is reproducible however
concurrent requests interleave. `faults.log` records each request's fault (or "none").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = ""
    tool_calls: list[dict[str, Any]] | None = None
    prompt_tokens: int = 10
    completion_tokens: int = 5
    delay_s: float = 0.0
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None  # sent as is, e.g. truncated JSON
    finish_reason: str = "stop"
    pieces: int = 1  # the body (or, streamed, the content) goes out in this many pieces
    pause_s: float = 0.0  # between two pieces


Script = Callable[[dict[str, Any]], Reply]


def sequence(replies: Iterable[Reply]) -> Script:
    """A script that answers with the given replies in order, then repeats the last."""
    queue = list(replies)
    lock = threading.Lock()

    def script(body: dict[str, Any]) -> Reply:
        with lock:
            return queue.pop(0) if len(queue) > 1 else queue[0]

    return script


def last_user(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


FAULT_KINDS = ("rate_limit", "server_error", "timeout", "truncated", "slow_stream")


@dataclass(frozen=True)
class FaultRecord:
    model: str
    prompt: str
    kind: str  # one of FAULT_KINDS, or "none"


class Faults:
    """A script that answers `rate` of the requests with a fault instead of the wrapped script.

    `client_timeout_s` is the client's timeout: a timeout sleeps `2 x` past it, and a slow
    stream sends `slow_pieces` pieces `0.6 x` of it apart (each read is in time, the
    whole is not). `retry_after_s` is the 429's Retry-After."""

    def __init__(
        self,
        script: Script,
        *,
        rate: float = 0.3,
        seed: int = 0,
        kinds: Iterable[str] = FAULT_KINDS,
        client_timeout_s: float = 1.0,
        retry_after_s: float = 0.2,
        slow_pieces: int = 4,
    ) -> None:
        self.script = script
        self.rate = rate
        self.seed = seed
        self.kinds = tuple(kinds)
        unknown = set(self.kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds: {sorted(unknown)}")
        self.client_timeout_s = client_timeout_s
        self.retry_after_s = retry_after_s
        self.slow_pieces = slow_pieces
        self.log: list[FaultRecord] = []
        self._seen: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def choose(self, model: str, prompt: str) -> str:
        """The fault for the next request of this (model, prompt): a kind, or "none"."""
        with self._lock:
            count = self._seen.get((model, prompt), 0)
            self._seen[(model, prompt)] = count + 1
        digest = hashlib.sha256(f"{self.seed}\x00{model}\x00{prompt}\x00{count}".encode()).digest()
        rng = random.Random(digest)  # noqa: S311 - reproducible faults, not cryptography
        return rng.choice(self.kinds) if rng.random() < self.rate else "none"

    def __call__(self, body: dict[str, Any]) -> Reply:
        model, prompt = str(body.get("model", "")), last_user(body)
        kind = self.choose(model, prompt)
        with self._lock:
            self.log.append(FaultRecord(model=model, prompt=prompt, kind=kind))
        return self.fault(kind, body)

    def fault(self, kind: str, body: dict[str, Any]) -> Reply:
        """The reply for a fault kind ("none": the wrapped script's own)."""
        if kind == "rate_limit":
            return Reply(status=429, content="rate limited", headers={"Retry-After": f"{self.retry_after_s:g}"})
        if kind == "server_error":
            return Reply(status=500, content="internal error")
        reply = self.script(body)
        if kind == "timeout":
            return replace(reply, delay_s=2 * self.client_timeout_s)
        if kind == "truncated":
            full = json.dumps(_completion_body(body, reply)).encode()
            return Reply(raw_body=full[: len(full) // 2])
        if kind == "slow_stream":
            pause = 0.6 * self.client_timeout_s
            return replace(reply, pieces=self.slow_pieces, pause_s=pause)
        return reply

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {kind: sum(1 for r in self.log if r.kind == kind) for kind in ("none", *FAULT_KINDS)}


def _pieces(data: bytes, n: int) -> list[bytes]:
    size = max(1, -(-len(data) // max(1, n)))
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def _stream_events(body: dict[str, Any], reply: Reply) -> list[bytes]:
    """The reply as chat.completion.chunk events: the content in `reply.pieces` deltas."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
    }
    content = reply.content or ""
    size = max(1, -(-len(content) // max(1, reply.pieces)))
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": content[i : i + size]} for i in range(0, len(content), size)
    ]
    chunks = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas or [{}]]
    usage = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    chunks.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}], "usage": usage}
    )
    return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]


def _completion_body(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.get("id", f"call_{uuid.uuid4().hex[:8]}"),
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))},
            }
            for call in reply.tool_calls
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


class _Server(ThreadingHTTPServer):
    # socketserver's listen backlog is 5: past a handful of connections opened at once, the
    # rest are reset and the client retries, which capped concurrent callers at about 7.
    request_queue_size = 1024


class ScriptedOpenAI:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; without this, Nagle's algorithm
            # and delayed ACKs add about 40 ms to every keep-alive response.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(
                self, status: int, body: bytes, headers: dict[str, str] | None = None, *, pieces: int = 1,
                pause_s: float = 0.0,
            ) -> None:  # fmt: skip
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self._write([body] if pieces <= 1 else _pieces(body, pieces), pause_s)

            def _write(self, parts: list[bytes], pause_s: float) -> None:
                # The client may have given up first (e.g. its timeout); that is the point of the test.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    for index, part in enumerate(parts):
                        if index and pause_s:
                            time.sleep(pause_s)
                        self.wfile.write(part)
                        self.wfile.flush()

            def _send_stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True  # no length: the stream ends when the connection does
                self._write(_stream_events(body, reply), reply.pause_s)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
                    self._send(200, json.dumps(body).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                body["_headers"] = {key.lower(): value for key, value in self.headers.items()}
                server.requests.append(body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                reply = server.script(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.raw_body is not None:
                    self._send(reply.status, reply.raw_body, reply.headers)
                elif reply.status >= 400:
                    error = {"error": {"message": reply.content or f"scripted {reply.status}", "type": "scripted"}}
                    self._send(reply.status, json.dumps(error).encode(), reply.headers)
                elif body.get("stream"):
                    self._send_stream(body, reply)
                else:
                    content = json.dumps(_completion_body(body, reply)).encode()
                    self._send(200, content, reply.headers, pieces=reply.pieces, pause_s=reply.pause_s)

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        port = self.httpd.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
