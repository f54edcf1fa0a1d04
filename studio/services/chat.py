"""A chat completion at /v1/ as a task and a run: both written at once, the run waited for
without holding a database connection, and its answer as OpenAI's completion bodies."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.http import HttpRequest

from studio.db import connection_release, releasing
from studio.errors import Invalid
from studio.models import Run, RunStatus, User
from studio.openai_errors import (
    OpenAIError,
    database_unavailable,
    error_body,
    run_ended_badly,
    run_timed_out,
)
from studio.openai_schemas import ChatIn, MessageIn, chat_parse
from studio.selectors.chat import default_pool_name, passthrough_pairs, policy_of, pool_resolve, run_if_ended
from studio.selectors.setup_cache import cached, one_generation
from studio.services import fast_path
from studio.services.events import run_group
from studio.services.fast_path import FastRun
from studio.services.runs import run_create
from studio.services.tasks import task_create
from studio.services.tokens import token_user
from studio.streaming import RunTokens
from studio.unavailable import DATABASE_ERRORS

log = logging.getLogger(__name__)

POLL_S = 0.05  # without a channel layer only
RECHECK_S = 2.0  # a run is read again this often in case its `run.finished` notification was lost
# A run given deadline_s ends itself just after it; wait a little longer to report how it ended.
DEADLINE_GRACE_S = 5


def wait_limit_s(deadline_s: int | None) -> float:
    if deadline_s is not None:
        return deadline_s + DEADLINE_GRACE_S
    return float(settings.ORCHESTRA_OPENAI_WAIT_S)


def chat_pool(pool: int | str | None, chat: dict[str, Any]) -> int:
    """The pool a chat runs on; a 422 when it has no pair that can take the chat's tools or
    response format."""
    # the default pool's name is a setting: part of the key
    pool_id = cached(("pool-ref", pool, default_pool_name()), lambda: pool_resolve(pool))
    if (chat.get("tools") or chat.get("response_format")) and not passthrough_pairs(pool_id):
        field = "tools" if chat.get("tools") else "response_format"
        raise Invalid(field, f"The pool has no admissible direct pair, the only kind that passes {field} on.")
    return pool_id


def task_metadata(chat: dict[str, Any] | None) -> dict[str, Any]:
    """A /v1 task's metadata: where it came from, and the chat around its text."""
    return {"via": "openai"} | ({"chat": chat} if chat else {})


@transaction.atomic
def chat_submit(
    *,
    user: User,
    text: str,
    policy: str | None,
    pool_id: int,
    decomposable: bool,
    preset: str | None,
    cost_preference: float | None,
    best_of: int,
    max_cost_usd: Decimal | None,
    deadline_s: int | None,
    policy_config: dict[str, Any] | None,
    checkpoint_id: int | None = None,
    chat: dict[str, Any] | None = None,
) -> Run:
    """A task of `text` and a run of it, both or neither; the run starts once this commits.
    A `preset` stands for its cost preference (run_create); `chat` (the conversation around the text, and
    the provider parameters passed through) rides in the task's metadata."""
    task = task_create(owner=user, text=text, decomposable=decomposable, metadata=task_metadata(chat))
    return run_create(
        owner=user, task_id=task.pk, pool_id=pool_id, policy=policy, policy_config=policy_config, preset=preset,
        cost_preference=cost_preference, best_of=best_of, max_cost_usd=max_cost_usd, deadline_s=deadline_s,
        checkpoint_id=checkpoint_id,
    )  # fmt: skip


async def _read_ended(run_id: int) -> Run | None:
    try:
        return await sync_to_async(releasing(run_if_ended))(run_id)
    except DATABASE_ERRORS as exc:
        raise database_unavailable(exc, run_id) from None


async def _finished_message(layer: Any, channel: str) -> None:
    """Until the run's group says the run finished (every other event is let by)."""
    while True:
        message = await layer.receive(channel)
        if any(event.get("type") == "run.finished" for event in message.get("events") or ()):
            return


async def run_wait(run_id: int, limit_s: float) -> Run | None:
    """The run once it has ended, or None if it is still going after `limit_s`.

    Woken by the run's channel group (its `run.finished` event), not by polling: the request
    joins the group, then reads the run once (it may have ended before), then reads it again
    when the group says it finished, and every RECHECK_S in case a notification was lost (the
    channel layer is Redis; Postgres holds the truth). Without a channel layer (Redis away) it
    reads the run every POLL_S. A database that cannot be reached is an OpenAIError (503)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    layer, channel = get_channel_layer(), None
    if layer is not None:
        try:
            channel = await layer.new_channel("v1-wait.")
            await layer.group_add(run_group(run_id), channel)
        except Exception:
            log.warning("run %s: no channel layer to wait on; reading the run every %s s", run_id, POLL_S)
            channel = None
    try:
        while True:
            run = await _read_ended(run_id)
            left = deadline - loop.time()
            if run is not None or left <= 0:
                return run
            if channel is None:
                await asyncio.sleep(min(POLL_S, left))
                continue
            try:
                await asyncio.wait_for(_finished_message(layer, channel), timeout=min(RECHECK_S, left))
            except TimeoutError:
                pass
            except Exception:
                log.warning("run %s: the channel layer failed; reading the run every %s s", run_id, POLL_S)
                channel = None
    finally:
        if channel is not None:
            with contextlib.suppress(Exception):
                await layer.group_discard(run_group(run_id), channel)


def bearer_user(authorization: str) -> User:
    """The user whose API token `authorization` ("Bearer <token>") carries; a 401 otherwise."""
    scheme, _, raw = authorization.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        raise OpenAIError(
            401,
            "You didn't provide an API key. Send an API token as 'Authorization: Bearer <token>' "
            "(create one with POST /api/tokens).",
            code="invalid_api_key",
        )
    user = token_user(raw=raw.strip())
    if user is None:
        raise OpenAIError(401, "Incorrect API key provided: it is unknown or revoked.", code="invalid_api_key")
    return user


@dataclass
class Started:
    """A chat's request, read, and its run: written and started (`fast` None), or decided in
    memory to be called here."""

    user: User
    chat: ChatIn
    policy: str | None
    text: str
    found: dict[str, Any]
    pool_id: int
    run: Run | None = None
    fast: FastRun | None = None


def _fast_fits(chat: ChatIn) -> bool:
    return fast_path.enabled() and not chat.decomposable and chat.best_of == 1 and chat.deadline_s is None


def _prepare(request: HttpRequest) -> Started:
    """The request's first work, in one hop to its sync thread: its token, its body, its pool,
    then its run decided in memory if it fits the fast path, held in Redis (`fast_hold`), and
    that run's call started. The set-up is read as of one generation (`setup_cache.one_generation`)."""
    try:
        with one_generation():
            user = bearer_user(request.headers.get("Authorization", ""))
            chat = chat_parse(request)
            policy = policy_of(chat.model)
            text, found = chat_task(chat)
            started = Started(user, chat, policy, text, found, chat_pool(chat.pool, found))
            if _fast_fits(chat):
                started.fast = fast_path.fast_prepare(
                    user=user, text=text, policy=policy, pool_id=started.pool_id, preset=chat.preset,
                    cost_preference=chat.cost_preference, max_cost_usd=chat.max_cost_usd,
                    policy_config=chat.policy_config, checkpoint_id=chat.checkpoint_id,
                    metadata=task_metadata(found),
                )  # fmt: skip
    finally:
        connection_release()  # the request may wait long now: its connection goes back to the pool
    if started.fast is not None and not fast_path.fast_hold(started.fast):
        started.fast = None  # no record of the call could be kept: the full machinery writes the run first
    if started.fast is not None:
        started.run = started.fast.run
        if started.chat.stream:  # its tokens go out as they come (completion_events)
            fast_path.fast_stream(started.fast)
        fast_path.fast_start(started.fast)
    return started


async def chat_start(request: HttpRequest) -> Started:
    """The chat's run: on the fast path when the policy's first step sends one call, else
    written and started on the full machinery (chat_submit)."""
    started: Started = await sync_to_async(_prepare)(request)
    if started.fast is None:
        chat = started.chat
        started.run = await sync_to_async(releasing(chat_submit))(
            user=started.user, text=started.text, policy=started.policy, pool_id=started.pool_id,
            decomposable=chat.decomposable, preset=chat.preset, cost_preference=chat.cost_preference,
            best_of=chat.best_of, max_cost_usd=chat.max_cost_usd, deadline_s=chat.deadline_s,
            policy_config=chat.policy_config, checkpoint_id=chat.checkpoint_id, chat=started.found,
        )  # fmt: skip
    return started


async def fast_ended(fast: FastRun, limit_s: float) -> Run | None:
    """Make a fast run's call: the run, ended; None when it went on to the full machinery (a
    retry), to be waited for as any run. Past `limit_s` a 504 naming the run: the call goes
    on, on its thread, and the run is recorded when it ends."""
    assert fast.call is not None  # started by _prepare
    call = asyncio.wrap_future(fast.call)
    done, _ = await asyncio.wait({call}, timeout=limit_s)
    if not done and fast_path.fast_abandon(fast):
        raise run_timed_out(fast.run.pk, limit_s)
    try:
        await call
    except DATABASE_ERRORS as exc:
        raise database_unavailable(exc, fast.run.pk) from None
    return fast.run if fast.ended else None


def conversation(messages: list[MessageIn]) -> tuple[str, dict[str, Any]]:
    """The task (the last user message's text) and the messages before and after it, as sent
    (`providers.conversation`: every model call of the run carries them)."""
    index = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    if index is None:
        raise OpenAIError(400, "The messages have no user message; the last one is the task.", param="messages")
    content = messages[index].content
    if isinstance(content, list):
        content = "\n".join(part.text for part in content if part.text and part.type in {"text", "input_text"})
    if not content or not content.strip():
        raise OpenAIError(400, "The last user message has no text.", param="messages")
    around = {
        "before": [m.model_dump(exclude_none=True) for m in messages[:index]],
        "after": [m.model_dump(exclude_none=True) for m in messages[index + 1 :]],
    }
    return content, {key: value for key, value in around.items() if value}


def chat_task(chat: ChatIn) -> tuple[str, dict[str, Any]]:
    """The task's text, and what the run's model calls carry besides it: the conversation, and
    the provider parameters passed through (tools, tool_choice, a JSON response format)."""
    text, found = conversation(chat.messages)
    if chat.tools:
        found["tools"] = [tool.model_dump(exclude_none=True) for tool in chat.tools]
        if chat.tool_choice is not None:
            choice = chat.tool_choice
            found["tool_choice"] = choice if isinstance(choice, str) else choice.model_dump()
    elif chat.tool_choice is not None:
        raise OpenAIError(400, "tool_choice needs tools.", param="tool_choice")
    if chat.response_format is not None and chat.response_format.type != "text":
        if chat.response_format.type == "json_schema" and chat.response_format.json_schema is None:
            raise OpenAIError(400, "A json_schema response_format needs its json_schema.", param="response_format")
        found["response_format"] = chat.response_format.model_dump(exclude_none=True, by_alias=True)
    return text, found


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
