"""A scripted synthetic pool: an OpenAI-compatible server that plays several made-up models, for
tests and for a demo with no provider key. SYNTHETIC: no model runs here.

    python -m workers.synthetic_pool --port 8011 [--config pool.json] [--latency 0.5] [--seed 0]
    python -m workers.synthetic_pool --print-config > pool.json

Each model has an accuracy per domain (`orchestrator.outcomes.DOMAINS`) and prices. Asked a
benchmark item (a task made by `manage.py tasks_from_benchmark`: its text is in the request's
user message), a model answers it right with its accuracy on the item's domain, decided by a
hash of (seed, model, item): the same request always gets the same outcome, and a right answer
is one the item's checker accepts, a wrong one one it rejects (`workers.synthetic_answers`).
Usage is realistic (prompt tokens about a quarter of the request's characters, completion
tokens of the answer's). A request it cannot place gets a 400, never an invented answer.

It serves `POST /v1/chat/completions` (streamed with `"stream": true`) and `GET /v1/models`;
every reply says `"system_fingerprint": "synthetic-pool"`, and the model ids start `synthetic-`.
The prices are what to give the pool's endpoints (`input_cost_per_mtok`, `output_cost_per_mtok`):
the studio computes the cost, as with any OpenAI-compatible endpoint.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from orchestrator.outcomes import DOMAINS, estimate_tokens
from workers.synthetic_answers import BUILTIN_TOOLS, AmbiguousPrompt, ItemIndex, answer, draw, message_text
from workers.synthetic_completions import FINGERPRINT, Answered, completion_body, stream_events
from workers.synthetic_config import DEFAULT_CONFIG, PoolConfig, config_to_dict, litellm_config, read_config

PROGRAM_ASK = "program that prints"  # the `program` primitive's instruction asks for one


class RequestError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": "invalid_request_error", "code": self.code}}


class SyntheticPool:
    """The pool's logic (`complete`, `models`) and its HTTP server on `host:port` (0: any free port)."""

    def __init__(
        self, config: PoolConfig = DEFAULT_CONFIG, index: ItemIndex | None = None, host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:  # fmt: skip
        self.config = config
        self.by_name = {model.name: model for model in config.models}
        self.index = index if index is not None else ItemIndex.of_benchmarks()
        self.httpd = _Server((host, port), _handler(self))
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {
                    "id": model.name,
                    "object": "model",
                    "created": 0,
                    "owned_by": FINGERPRINT,
                    "synthetic": True,
                    "accuracy": {domain: model.accuracy_on(domain) for domain in DOMAINS},
                    "pricing": {
                        "input_cost_per_mtok": model.input_cost_per_mtok,
                        "output_cost_per_mtok": model.output_cost_per_mtok,
                    },
                }
                for model in self.config.models
            ],
        }

    def complete(self, body: Mapping[str, Any]) -> Answered:
        """The answer to a chat completion request; RequestError when there is none to give."""
        name = str(body.get("model", ""))
        model = self.by_name.get(name)
        if model is None:
            known = ", ".join(self.by_name)
            raise RequestError(404, "model_not_found", f"The synthetic pool has no model {name!r}; it plays {known}.")
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise RequestError(400, "invalid_messages", "messages must be a list of message objects.")
        tools = [str((t.get("function") or {}).get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        try:
            spec = self.index.find(messages, tools)
        except AmbiguousPrompt as exc:
            raise RequestError(400, "ambiguous_prompt", str(exc)) from None
        if spec is None:
            raise RequestError(
                400, "unknown_prompt",
                "The synthetic pool answers only the benchmark items of data/benchmarks/ (tasks made by manage.py "
                "tasks_from_benchmark), and no user message of this request holds one.",
            )  # fmt: skip
        right = draw(self.config.seed, model.name, spec) < model.accuracy_on(spec.domain)
        system = " ".join(message_text(m) for m in messages if m.get("role") == "system")
        offered = bool(set(tools) - BUILTIN_TOOLS)
        reply = answer(spec, right, tools=offered, program=PROGRAM_ASK in system)
        sent = "".join(message_text(m) for m in messages) + (json.dumps(body["tools"]) if body.get("tools") else "")
        said = reply.content if reply.content is not None else json.dumps(reply.tool_calls)
        n = body.get("n") or 1
        return Answered(
            model=model.name, item_id=spec.item_id, right=right, reply=reply, prompt_tokens=estimate_tokens(sent),
            completion_tokens=estimate_tokens(said), n=n if isinstance(n, int) and 1 <= n <= 16 else 1,
        )  # fmt: skip

    def start(self) -> SyntheticPool:
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def close(self) -> None:
        if self.thread is not None:
            self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> SyntheticPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # the default 5 resets connections opened at once by concurrent callers


def _handler(pool: SyntheticPool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are separate writes; no 40 ms delayed ACKs

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        def _stream(self, answered: Answered) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True  # no length: the stream ends with the connection
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for event in stream_events(answered):
                    self.wfile.write(event)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, pool.models())
            else:
                self._send(404, RequestError(404, "not_found", f"No route {self.path}.").body())

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, RequestError(404, "not_found", f"No route {self.path}.").body())
                return
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("not an object")
            except ValueError:
                self._send(400, RequestError(400, "invalid_json", "The body is not a JSON object.").body())
                return
            try:
                answered = pool.complete(body)
            except RequestError as error:
                self._send(error.status, error.body())
                return
            if pool.config.latency_s:
                time.sleep(pool.config.latency_s)
            if body.get("stream"):
                self._stream(answered)
            else:
                self._send(200, completion_body(answered))

    return Handler


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A synthetic OpenAI-compatible pool of made-up models (SYNTHETIC).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--config", type=Path, help="a pool config (JSON); default: the four models built in")
    parser.add_argument("--latency", type=float, help="seconds before each completion (default 0, or the config's)")
    parser.add_argument("--seed", type=int, help="the outcome seed (default 0, or the config's)")
    parser.add_argument("--print-config", action="store_true", help="print the config as JSON and exit")
    parser.add_argument(
        "--print-litellm-config", action="store_true",
        help="print the pool as a LiteLLM Proxy config (YAML) at --host/--port, for manage.py import_litellm_config",
    )  # fmt: skip
    parser.add_argument(
        "--primitives", default="direct", help="the admissible primitives the LiteLLM config names (default: direct)"
    )
    args = parser.parse_args(argv)
    try:
        config = read_config(args.config) if args.config else DEFAULT_CONFIG
    except ValueError as exc:
        parser.error(str(exc))
    if args.latency is not None:
        config = PoolConfig(models=config.models, seed=config.seed, latency_s=max(0.0, args.latency))
    if args.seed is not None:
        config = PoolConfig(models=config.models, seed=args.seed, latency_s=config.latency_s)
    if args.print_config:
        print(json.dumps(config_to_dict(config), indent=2))
        return 0
    if args.print_litellm_config:
        import yaml

        primitives = [name.strip() for name in args.primitives.split(",") if name.strip()]
        base_url = f"http://{args.host}:{args.port}/v1"
        print(yaml.safe_dump(litellm_config(config, base_url, primitives), sort_keys=False), end="")
        return 0
    try:
        pool = SyntheticPool(config, host=args.host, port=args.port)
    except OSError as exc:
        parser.error(f"cannot listen on {args.host}:{args.port}: {exc}")
    print(f"SYNTHETIC pool: {len(pool.index)} benchmark items, latency {config.latency_s:g} s, seed {config.seed}")
    for model in config.models:
        shares = ", ".join(f"{domain} {share:g}" for domain, share in model.accuracy.items())
        print(f"  {model.name}: {shares}; ${model.input_cost_per_mtok:g} / ${model.output_cost_per_mtok:g} per Mtok")
    print(f"serving {pool.base_url} (endpoint model: openai/<name>, api_base: that URL, any api_key)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        pool.httpd.serve_forever()
    pool.httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
