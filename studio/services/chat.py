"""A chat completion at /v1/ as a task and a run: both written at once, the run waited for
without holding a database connection, and its answer as OpenAI's completion bodies."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction

from studio.errors import Invalid
from studio.models import Run, User
from studio.openai_errors import database_unavailable
from studio.selectors.chat import passthrough_pairs, pool_resolve, run_if_ended
from studio.services.runs import PRESETS, run_create
from studio.services.tasks import task_create
from studio.unavailable import DATABASE_ERRORS

POLL_S = 0.05
# A run given deadline_s ends itself just after it; wait a little longer to report how it ended.
DEADLINE_GRACE_S = 5


def wait_limit_s(deadline_s: int | None) -> float:
    if deadline_s is not None:
        return deadline_s + DEADLINE_GRACE_S
    return float(settings.ORCHESTRA_OPENAI_WAIT_S)


@transaction.atomic
def chat_submit(
    *,
    user: User,
    text: str,
    policy: str | None,
    pool: int | str | None,
    decomposable: bool,
    preset: str | None,
    cost_preference: float | None,
    best_of: int,
    max_cost_usd: Decimal | None,
    deadline_s: int | None,
    policy_config: dict[str, Any] | None,
    chat: dict[str, Any] | None = None,
) -> Run:
    """A task of `text` and a run of it, both or neither; the run starts once this commits.
    A `preset` stands for its cost preference; `chat` (the conversation around the text, and
    the provider parameters passed through) rides in the task's metadata."""
    pool_id = pool_resolve(pool)
    if chat and (chat.get("tools") or chat.get("response_format")) and not passthrough_pairs(pool_id):
        field = "tools" if chat.get("tools") else "response_format"
        raise Invalid(field, f"The pool has no admissible direct pair, the only kind that passes {field} on.")
    metadata: dict[str, Any] = {"via": "openai"} | ({"chat": chat} if chat else {})
    task = task_create(owner=user, text=text, decomposable=decomposable, metadata=metadata)
    cost_preference = PRESETS[preset] if preset is not None else cost_preference
    return run_create(
        owner=user, task_id=task.pk, pool_id=pool_id, policy=policy, policy_config=policy_config,
        cost_preference=cost_preference, best_of=best_of, max_cost_usd=max_cost_usd, deadline_s=deadline_s,
    )  # fmt: skip


async def run_wait(run_id: int, limit_s: float) -> Run | None:
    """The run once it has ended, or None if it is still going after `limit_s`. A database
    that cannot be reached is an OpenAIError (503) naming the run."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while True:
        try:
            run = await sync_to_async(run_if_ended)(run_id)
        except DATABASE_ERRORS as exc:
            raise database_unavailable(exc, run_id) from None
        if run is not None or loop.time() >= deadline:
            return run
        await asyncio.sleep(min(POLL_S, max(deadline - loop.time(), 0)))


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
