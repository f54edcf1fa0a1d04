"""A chat completion at /v1/ as a task and a run: the request read (its token, its conversation
and its pool), then both written at once, or the run decided in memory on the fast path.
`chat_wait` waits for the run; `chat_completion` gives its answer as OpenAI's completion bodies."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.http import HttpRequest

from studio.db import connection_release, releasing
from studio.errors import Invalid
from studio.models import Run, User
from studio.openai_errors import OpenAIError
from studio.openai_schemas import ChatIn, MessageIn, chat_parse
from studio.selectors.chat import default_pool_name, passthrough_pairs, policy_of, pool_resolve
from studio.selectors.setup_cache import cached, one_generation
from studio.services import fast_path
from studio.services.fast_path import FastRun
from studio.services.runs import run_create
from studio.services.tasks import task_create
from studio.services.tokens import token_user


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
