"""The provider layer: every model call goes through litellm, with retries and cost.

`LLMClient.complete` calls one endpoint (any litellm provider: openai/, anthropic/,
hosted_vllm/, ollama/, an OpenAI-compatible `api_base`, or replay/), retries transient
failures (429, 5xx, timeouts, lost connections, broken bodies) with exponential backoff
and full jitter, and raises `ProviderError` with a typed kind for the rest. It meters
tokens, cost and time over all the calls one primitive makes.

A call made while a token sink is set (`token_sink`, set around an attempt that someone
follows: studio/streaming.py) is streamed from the provider: each piece of its text goes to
the sink as it arrives, and the pieces are put together into the same completion. A stream
that ends before the provider says it finished is a `server_error` (retried), never a short
answer.

The HTTP client's timeout bounds each read, not the whole response: a body that trickles
in, every piece just in time, would hold a call (and its worker thread) for as long as the
server likes. So a call over the network also has a deadline for the whole call,
`timeout_s`; past it the call is given up as a `timeout` (its thread is left to finish
or time out on its own; what it returns is dropped, never billed).

Where no litellm callback is configured, litellm's own success and failure logging of a call
that is not streamed is skipped (`unlogged`; a streamed call logs as litellm does): after
every call litellm hands that work (a logging payload, a cost) to a thread of its own, where
nothing would receive it, and that thread then held the GIL just when the call's own thread
went on (/v1's fast path waited 0.6 ms at p50 for it: docs/api.md). A litellm callback set
(`litellm.callbacks`, `litellm.success_callback`, ...) gets every call.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx  # noqa: E402
import litellm  # noqa: E402
import openai  # noqa: E402

from orchestrator.core.envelope import TRANSIENT_ERRORS  # noqa: E402
from providers.conversation import Conversation  # noqa: E402
from providers.threads import process_pool  # noqa: E402

try:  # litellm's mark of a call whose logging is done elsewhere; a litellm without it logs every call
    from litellm._internal_context import internal_sub_call
except ImportError:  # pragma: no cover - depends on the litellm release
    internal_sub_call = contextlib.nullcontext

litellm.suppress_debug_info = True
litellm.drop_params = True  # a provider that lacks a parameter (e.g. n) ignores it

# litellm's callback lists: a call logs through litellm only where one of them is set.
CALLBACK_LISTS = (
    "callbacks", "success_callback", "_async_success_callback", "failure_callback", "_async_failure_callback",
)  # fmt: skip


def unlogged() -> contextlib.AbstractContextManager[Any]:
    """Around a litellm call: its success or failure logging skipped where no litellm callback
    is configured (see the module's docstring); nothing changes where one is."""
    if any(getattr(litellm, name, None) for name in CALLBACK_LISTS):
        return contextlib.nullcontext()
    return internal_sub_call()


def logged_as_configured(kwargs: dict[str, Any]) -> Any:
    """litellm.completion(**kwargs), `unlogged` where nothing would get its log."""
    with unlogged():
        return litellm.completion(**kwargs)


class TokenSink(Protocol):
    """Where a streamed call's text goes as it arrives (studio.streaming.RunTokens)."""

    def call(self) -> None:
        """A call starts: the attempt's first, a retry, or another of its samples."""

    def delta(self, text: str) -> None:
        """The next piece of the call's text."""


# The sink of the attempt this thread runs; None: its calls are not streamed.
token_sink: ContextVar[TokenSink | None] = ContextVar("token_sink", default=None)


@dataclass(frozen=True)
class EndpointConfig:
    """What it takes to call one model endpoint; built from a ModelEndpoint row."""

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None
    timeout_s: float = 60.0  # each read, and the whole call (see the module's docstring)
    max_retries: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 20.0

    @property
    def is_replay(self) -> bool:
        return self.model.startswith("replay/")


class ProviderError(Exception):
    """A failed call. `kind` is one of the envelope's error kinds."""

    def __init__(self, kind: str, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after_s = retry_after_s

    @property
    def transient(self) -> bool:
        return self.kind in TRANSIENT_ERRORS


@dataclass
class Completion:
    text: str
    tool_calls: list[dict[str, Any]]
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float
    finish_reason: str | None
    recording: dict[str, Any] | None = None  # replay only: the recorded outcome's metadata


@dataclass
class Meter:
    """Totals over every call a primitive makes, failed attempts included."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    retries: int = 0

    def add(self, completion: Completion) -> None:
        self.calls += 1
        self.tokens_in += completion.tokens_in
        self.tokens_out += completion.tokens_out
        self.cost_usd += completion.cost_usd


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "headers", None) or {}
    value = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


# litellm prefixes messages with class names: "litellm.RateLimitError: RateLimitError: OpenAIException - ".
_NOISE = re.compile(r"^(?:litellm\.\w+:\s*|\w+(?:Error|Exception)\s*[:-]\s*|error\s*-\s*)")


# litellm's message for a 200 whose body is not the JSON it expects, e.g. cut short.
_BROKEN_BODY = re.compile(r"^(?P<error>.*?), Received response - <APIResponse \[(?P<status>[^\]]*)\]")


def plain_message(exc: Exception) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    line = text.splitlines()[0] if text else ""
    while (shorter := _NOISE.sub("", line, count=1)) != line:
        line = shorter
    broken = _BROKEN_BODY.match(line)
    if broken:
        line = f"The provider's response ({broken['status']}) was not valid JSON: {broken['error']}."
    return line[:500] or type(exc).__name__


def _unreachable(exc: BaseException) -> bool:
    """Whether the call never reached the provider: a connection error anywhere in its causes."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, openai.APIConnectionError | httpx.ConnectError | ConnectionError) and not isinstance(
            seen, openai.APITimeoutError
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def classify(exc: Exception) -> ProviderError:
    """Map a litellm/openai exception to a ProviderError with a kind and a plain message."""
    if isinstance(exc, ProviderError):
        return exc
    message = plain_message(exc)
    if "No recording for replay/" in message:
        return ProviderError("no_recording", message)
    if _unreachable(exc):  # litellm reports a refused or failed connection as a 500
        return ProviderError("connection", message)
    kinds: list[tuple[type[BaseException], str]] = [
        (litellm.ContextWindowExceededError, "context_length"),
        (litellm.AuthenticationError, "auth"),
        (litellm.PermissionDeniedError, "auth"),
        (litellm.NotFoundError, "not_found"),
        (litellm.RateLimitError, "rate_limit"),
        (litellm.Timeout, "timeout"),
        (litellm.APIConnectionError, "connection"),
        (litellm.BadRequestError, "bad_request"),
        (litellm.UnprocessableEntityError, "bad_request"),
        (litellm.InternalServerError, "server_error"),
        (litellm.ServiceUnavailableError, "server_error"),
        (litellm.BadGatewayError, "server_error"),
        (litellm.APIResponseValidationError, "server_error"),
    ]
    for exc_type, kind in kinds:
        if isinstance(exc, exc_type):
            return ProviderError(kind, message or kind, retry_after_s=_retry_after(exc))
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status >= 500:
        return ProviderError("server_error", message, retry_after_s=_retry_after(exc))
    if isinstance(exc, litellm.APIError):
        return ProviderError("server_error", message)
    return ProviderError("unknown", f"{type(exc).__name__}: {message}")


def _usage(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    return int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)


LLM_CALL_THREADS = 512  # per process: more calls at once than any worker or server here makes


def within_deadline(call: Callable[[], Any], deadline_s: float) -> Any:
    """`call()`, or ProviderError("timeout") once `deadline_s` has passed. The call runs on a
    thread of the process's "llm-call" pool and is abandoned at the deadline: a blocking HTTP
    read cannot be cut short from outside, but its result (or error) is then dropped, and the
    thread is free again once the read's own timeout ends it (litellm's `timeout`)."""
    running = process_pool("llm-call", LLM_CALL_THREADS).submit(call)
    try:
        return running.result(timeout=deadline_s)
    except FutureTimeout:
        raise ProviderError("timeout", f"No complete response within {deadline_s:g} s.") from None


def streamed(kwargs: dict[str, Any], sink: TokenSink) -> Any:
    """litellm.completion(**kwargs) streamed: each piece of text to `sink` as it arrives, then
    the chunks put together into one response (litellm's stream_chunk_builder), usage included.
    A stream that stops without a finish reason was cut short: a `server_error`."""
    sink.call()
    chunks = []
    finished = False
    for chunk in litellm.completion(**kwargs, stream=True, stream_options={"include_usage": True}):
        chunks.append(chunk)
        for choice in getattr(chunk, "choices", None) or ():
            finished = finished or bool(choice.finish_reason)
            text = choice.delta.content if choice.delta is not None else None
            if text:
                sink.delta(text)
    if not finished:
        raise ProviderError("server_error", "The provider's stream ended before its answer did.")
    response = litellm.stream_chunk_builder(chunks, messages=kwargs["messages"])
    if response is None:
        raise ProviderError("server_error", "The provider's stream held no answer.")
    return response


class LLMClient:
    """Calls one endpoint; meters every call in `self.meter`."""

    def __init__(self, config: EndpointConfig, *, sleep: Any = time.sleep) -> None:
        self.config = config
        self.meter = Meter()
        self._sleep = sleep
        # A /v1 chat's conversation, carried around every call's messages (not replay's: it
        # answers by the task's prompt).
        self.conversation: Conversation | None = None

    @property
    def is_replay(self) -> bool:
        return self.config.is_replay

    def cost(self, tokens_in: int, tokens_out: int, response: Any) -> float:
        """A replay's recorded cost; else the endpoint's own prices when set; else
        litellm's price map (0 when the model is not in it), as litellm read it during the call:
        asking again cost a tenth of the call's CPU for a model the map lacks."""
        c = self.config
        hidden = getattr(response, "_hidden_params", {}) or {}
        if c.is_replay and hidden.get("response_cost") is not None:
            return float(hidden["response_cost"])
        if c.input_cost_per_mtok is not None or c.output_cost_per_mtok is not None:
            return (tokens_in * (c.input_cost_per_mtok or 0) + tokens_out * (c.output_cost_per_mtok or 0)) / 1e6
        if "response_cost" in hidden:  # litellm priced it as it made it (None: not in its map)
            return float(hidden["response_cost"] or 0.0)
        try:
            return float(litellm.completion_cost(completion_response=response, model=c.model))
        except Exception:  # a model missing from the price map costs "unknown", reported as 0
            return 0.0

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        primitive: str = "direct",
        item_id: str | None = None,
        item_ids: tuple[str, ...] = (),
        **params: Any,
    ) -> Completion:
        """One chat completion, retried on transient errors. Raises ProviderError.

        `item_id` names the recorded item replay should answer; `item_ids`, for a call that
        takes a composite node whole, every part's (replay answers each from its recording)."""
        if self.conversation is not None and not self.is_replay:
            messages = self.conversation.around(messages)
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                completion = self._call(messages, primitive=primitive, item_id=item_id, item_ids=item_ids, **params)
            except Exception as exc:
                error = classify(exc)
                self.meter.latency_s += time.perf_counter() - started
                if not error.transient or attempt >= self.config.max_retries:
                    raise error from None
                attempt += 1
                self.meter.retries += 1
                self._sleep(self._backoff(attempt, error.retry_after_s))
                continue
            completion.latency_s = time.perf_counter() - started
            self.meter.latency_s += completion.latency_s
            self.meter.add(completion)
            return completion

    def _backoff(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return min(retry_after_s, self.config.backoff_max_s)
        ceiling = min(self.config.backoff_max_s, self.config.backoff_base_s * 2 ** (attempt - 1))
        return random.uniform(0, ceiling)  # noqa: S311 - jitter, not cryptography

    def _call(
        self,
        messages: list[dict[str, Any]],
        *,
        primitive: str,
        item_id: str | None,
        item_ids: tuple[str, ...] = (),
        **params: Any,
    ) -> Completion:
        c = self.config
        kwargs: dict[str, Any] = {
            "model": c.model,
            "messages": messages,
            "timeout": c.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
            **params,
        }
        if c.api_base:
            kwargs["api_base"] = c.api_base
        if c.api_key:
            kwargs["api_key"] = c.api_key
        sink = token_sink.get()
        if c.is_replay:
            kwargs["metadata"] = {"primitive": primitive, "item_id": item_id, "item_ids": list(item_ids)}
            response = logged_as_configured(kwargs)  # in process: its latency is simulated, if at all
        elif sink is not None and not params.get("tools") and not params.get("response_format"):
            response = within_deadline(lambda: streamed(kwargs, sink), c.timeout_s)
        else:
            response = within_deadline(lambda: logged_as_configured(kwargs), c.timeout_s)
        tokens_in, tokens_out = _usage(response)
        choice = response.choices[0]
        message = choice.message
        tool_calls = [call.model_dump() for call in (message.tool_calls or [])]
        hidden = getattr(response, "_hidden_params", {}) or {}
        return Completion(
            text=message.content or "",
            tool_calls=tool_calls,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=self.cost(tokens_in, tokens_out, response),
            latency_s=0.0,
            finish_reason=choice.finish_reason,
            recording=hidden.get("replay"),
        )

    def complete_many(self, messages: list[dict[str, Any]], n: int, **params: Any) -> list[Completion]:
        """n samples of the same prompt (separate calls, so every provider supports it)."""
        return [self.complete(messages, **params) for _ in range(n)]
