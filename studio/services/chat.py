"""A chat completion at /v1/ as a task and a run: both written at once, the run waited for
without holding a database connection, and its answer as OpenAI's completion bodies."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction

from studio.models import Run, User
from studio.openai_errors import database_unavailable
from studio.selectors.chat import pool_resolve, run_if_ended
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
) -> Run:
    """A task of `text` and a run of it, both or neither; the run starts once this commits.
    A `preset` stands for its cost preference."""
    pool_id = pool_resolve(pool)
    task = task_create(owner=user, text=text, decomposable=decomposable, metadata={"via": "openai"})
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

    def __init__(self, run: Run, model: str) -> None:
        self.id = f"chatcmpl-run-{run.pk}"
        self.created = int(run.created_at.timestamp())
        self.model = model

    def completion(self, run: Run) -> dict[str, Any]:
        message = {"role": "assistant", "content": run.final_answer}
        return {
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
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
