"""A /v1 run's answer as OpenAI's bodies: the chat.completion, and the chat.completion.chunk
events of a streamed answer (`completion_events`), as the model writes it or once the run ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Literal

from studio.models import Run, RunStatus
from studio.openai_errors import OpenAIError, error_body, run_ended_badly, run_timed_out
from studio.services.chat_wait import run_wait
from studio.streaming import RunTokens


class Completion:
    """The chat.completion and chat.completion.chunk bodies for one run."""

    def __init__(self, run: Run, model: str, *, tools: bool = False) -> None:
        self.id = f"chatcmpl-run-{run.pk}"
        self.created = int(run.created_at.timestamp())
        self.model = model
        self.tools = tools  # the request offered tools: an answer may be tool calls

    def tool_calls(self, run: Run) -> list[dict[str, Any]] | None:
        """The tool calls the run answered with (`direct`'s `{"tool_calls": [...]}`), if any."""
        if not self.tools:
            return None
        try:
            found = json.loads(run.final_answer)
        except ValueError:
            return None
        calls = found.get("tool_calls") if isinstance(found, dict) and set(found) == {"tool_calls"} else None
        return calls if isinstance(calls, list) and calls else None

    def completion(self, run: Run) -> dict[str, Any]:
        calls = self.tool_calls(run)
        message: dict[str, Any] = {"role": "assistant", "content": None if calls else run.final_answer}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else "stop"
        return {
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage(run),
            "orchestra": {
                "run_id": run.pk, "task_id": run.task_id, "pool_id": run.pool_id, "policy": run.policy,
                "cost_usd": float(run.cost_usd), "latency_s": run.latency_s,
            },
        }  # fmt: skip

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return {
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [choice],
        }  # fmt: skip

    def usage_chunk(self, run: Run) -> dict[str, Any]:
        return {**self.chunk({}), "choices": [], "usage": usage(run)}


def usage(run: Run) -> dict[str, int]:
    return {
        "prompt_tokens": run.tokens_in,
        "completion_tokens": run.tokens_out,
        "total_tokens": run.tokens_in + run.tokens_out,
    }


# While a streamed run works, a comment this often, so that proxies keep the connection; the
# answer in content chunks of this many characters.
KEEPALIVE_S = 15.0
CHUNK_CHARS = 64
Event = tuple[Literal["data", "comment"], dict[str, Any] | str]


def answer_changed(run: Run, streamed: int) -> OpenAIError:
    return OpenAIError(
        502,
        f"The answer streamed so far ({streamed} characters) was not kept: its call failed part-way and run "
        f"{run.pk} answered with another pair. Its answer is at /api/runs/{run.pk}.",
        type="orchestra_run_failed", code="answer_changed", run_id=run.pk,
    )  # fmt: skip


def _answer_so_far(tokens: RunTokens, sent: str) -> str:
    """What of the streamed call's text is new answer: its text stripped (the `direct` answer is
    the reply stripped), past what was sent; nothing once a second call began (a retry)."""
    visible = tokens.text.strip()
    if tokens.calls != 1 or not visible.startswith(sent):
        return ""
    return visible[len(sent) :]


async def _streamed_call(
    call: asyncio.Future[Run | None], tokens: RunTokens, reply: Completion, sent: list[str]
) -> AsyncIterator[Event]:
    """While the fast path's call runs, its text as content chunks as it grows (`sent` keeps
    what went out); a keep-alive when nothing came for KEEPALIVE_S."""
    loop = asyncio.get_running_loop()
    woke = asyncio.Event()

    def wake() -> None:  # on the call's thread
        loop.call_soon_threadsafe(woke.set)

    tokens.listen(wake)
    while True:
        ended = call.done()
        piece = _answer_so_far(tokens, "".join(sent))
        if piece:
            sent.append(piece)
            yield "data", reply.chunk({"content": piece})
        if ended:
            return
        waiter: asyncio.Future[Any] = asyncio.ensure_future(woke.wait())
        wanted: set[asyncio.Future[Any]] = {call, waiter}
        done, _ = await asyncio.wait(wanted, timeout=KEEPALIVE_S, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        woke.clear()
        if not done:
            yield "comment", "the call is still going"


async def completion_events(
    run: Run,
    reply: Completion,
    limit_s: float,
    include_usage: bool,
    start: Awaitable[Run | None] | None = None,
    tokens: RunTokens | None = None,
) -> AsyncIterator[Event]:
    """The run's answer as chat.completion.chunk events (`data`: a chunk, an error, or
    "[DONE]"; `comment`: a keep-alive). The role goes first, at once; an error after that is
    an event (the status is already 200). `start`, when given, is awaited first: the fast
    path's call, which gives the run ended, or None when the run goes on elsewhere. With
    `tokens` (a `direct` call streamed), the answer goes out as the model writes it; else, in
    pieces once the run ends. A streamed answer that the run does not keep (the call failed
    part-way and another pair answered) ends in an error event naming the run."""
    yield "data", reply.chunk({"role": "assistant", "content": ""})
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    ended = None
    sent: list[str] = []
    if start is not None:
        call = asyncio.ensure_future(start)
        try:
            if tokens is not None:
                async for event in _streamed_call(call, tokens, reply, sent):
                    yield event
            ended = await call
        except OpenAIError as exc:
            yield "data", error_body(exc)
            return
        finally:
            call.cancel()  # the client went away: stop waiting for the call, as before
    while ended is None:
        left = deadline - loop.time()
        if left <= 0:
            yield "data", error_body(run_timed_out(run.pk, limit_s))
            return
        try:
            ended = await run_wait(run.pk, min(left, KEEPALIVE_S))
        except OpenAIError as exc:
            yield "data", error_body(exc)
            return
        if ended is None:
            yield "comment", f"run {run.pk} is still going"
    if ended.status != RunStatus.SUCCEEDED:
        yield "data", error_body(run_ended_badly(ended))
        return
    calls = reply.tool_calls(ended)
    if calls:
        yield "data", reply.chunk({"tool_calls": [{"index": i, **call} for i, call in enumerate(calls)]})
        yield "data", reply.chunk({}, finish_reason="tool_calls")
    else:
        streamed = "".join(sent)
        if not ended.final_answer.startswith(streamed):
            yield "data", error_body(answer_changed(ended, len(streamed)))
            return
        answer = ended.final_answer[len(streamed) :]
        for at in range(0, len(answer), CHUNK_CHARS):
            yield "data", reply.chunk({"content": answer[at : at + CHUNK_CHARS]})
        yield "data", reply.chunk({}, finish_reason="stop")
    if include_usage:
        yield "data", reply.usage_chunk(ended)
    yield "data", "[DONE]"
