"""Recordings from Postgres (the RecordedOutcome table), for the Celery workers."""

from __future__ import annotations

from functools import lru_cache

from django.db.models.functions import Length

from orchestrator.outcomes import estimate_tokens, prompt_key, tokens_from_chars
from studio.models import RecordedOutcome
from workers.replay.store import Recording


class _Miss(Exception):
    """Raised through lru_cache, which does not cache exceptions: misses are not remembered,
    so an outcome imported later is found."""


class DatabaseStore:
    """Looks recordings up by index and caches the ones found (a recording is immutable:
    re-importing an item replaces it with the same facts)."""

    def __init__(self, cache_size: int = 20_000) -> None:
        self._cached = lru_cache(maxsize=cache_size)(self._query)

    def find(self, model: str, primitive: str, *, item_id: str | None, prompt: str) -> Recording | None:
        key = item_id if item_id is not None else prompt_key(prompt)
        try:
            return self._cached(model, primitive, item_id is not None, key)
        except _Miss:
            return None

    def _query(self, model: str, primitive: str, by_item: bool, key: str) -> Recording:
        rows = RecordedOutcome.objects.filter(model=model, primitive=primitive)
        rows = rows.filter(item_id=key) if by_item else rows.filter(prompt_sha256=key)
        row = (
            rows.order_by("source")
            .annotate(prompt_chars=Length("prompt"))
            .values(
                "source",
                "item_id",
                "response",
                "score",
                "prompt_tokens",
                "completion_tokens",
                "cost_usd",
                "latency_s",
                "prompt_chars",
            )  # fmt: skip
            .first()
        )
        if row is None:
            raise _Miss
        prompt_tokens = row["prompt_tokens"]
        if prompt_tokens is None:
            prompt_tokens = tokens_from_chars(row["prompt_chars"] or 0)
        completion_tokens = row["completion_tokens"]
        if completion_tokens is None:
            completion_tokens = estimate_tokens(row["response"])
        return Recording(
            source=row["source"],
            item_id=row["item_id"],
            model=model,
            primitive=primitive,
            response=row["response"],
            score=row["score"],
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=float(row["cost_usd"]) if row["cost_usd"] is not None else None,
            latency_s=row["latency_s"],
        )
