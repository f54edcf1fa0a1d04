"""What /v1/ reads: its models (one per policy), the pool a chat completion runs on, and
whether the run has ended. Errors are OpenAIErrors, in OpenAI's shape."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings

from orchestrator.core.step import PASSTHROUGH_PRIMITIVES
from orchestrator.policies import policy_names
from studio.db import connection_release
from studio.models import RUN_ENDED, ModelPool, Run
from studio.openai_errors import OpenAIError
from studio.selectors.setup_cache import pool_view

MODEL = "orchestra"
STARTED = int(time.time())


def default_pool_name() -> str:
    return settings.ORCHESTRA_DEFAULT_POOL


def model_card(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": STARTED, "owned_by": "orchestra"}


def model_ids() -> list[str]:
    return [MODEL, *(f"{MODEL}/{name}" for name in policy_names())]


def policy_of(model: str) -> str | None:
    """The policy that model `orchestra[/<policy>]` names; None (the studio's default) for `orchestra`."""
    name = model.strip()
    if name == MODEL:
        return None
    prefix, slash, policy = name.partition("/")
    if not name or (prefix == MODEL and slash and not policy):
        raise OpenAIError(400, "Name a model: orchestra or orchestra/<policy>.", param="model")
    if prefix != MODEL or policy not in policy_names():
        raise OpenAIError(
            404,
            f"The model {model[:100]!r} does not exist; use one of {', '.join(model_ids())}.",
            param="model", code="model_not_found",
        )  # fmt: skip
    return policy


def pool_resolve(ref: int | str | None) -> int:
    """The pool named by id or name; by default ORCHESTRA_DEFAULT_POOL, or else the first
    pool that has an admissible pair."""
    pools = ModelPool.objects.all()
    if ref is None:
        usable = pools.filter(endpoints__enabled=True, endpoints__admissibilities__allowed=True).distinct()
        pool = usable.filter(name=default_pool_name()).first() or usable.order_by("id").first()
        if pool is None:
            raise OpenAIError(
                422, "No model pool has an admissible (model, primitive) pair yet; an admin sets one up.",
                param="pool",
            )  # fmt: skip
        return pool.pk
    pool = pools.filter(pk=ref).first() if isinstance(ref, int) else pools.filter(name=ref).first()
    if pool is None and isinstance(ref, str) and ref.isdigit():
        pool = pools.filter(pk=int(ref)).first()
    if pool is None:
        raise OpenAIError(400, f"There is no model pool {str(ref)[:100]!r}.", param="pool", code="pool_not_found")
    return pool.pk


def run_if_ended(run_id: int) -> Run | None:
    """The run if it has ended. The connection goes back at once (to the process's pool): a
    run may take minutes, and every waiting request would otherwise hold one all along."""
    try:
        return Run.objects.filter(pk=run_id, status__in=RUN_ENDED).first()
    finally:
        connection_release()


def passthrough_pairs(pool_id: int) -> bool:
    """Whether the pool has an admissible `direct` pair (the primitive that passes a chat's
    tools and response format on: `orchestrator.core.step.PASSTHROUGH_PRIMITIVES`)."""
    return any(pair.ref.primitive in PASSTHROUGH_PRIMITIVES for pair in pool_view(pool_id).pairs)
