"""Recordings from Postgres (the RecordedOutcome table), for the Celery workers."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from django.db.models import Q
from django.db.models.functions import Length

from orchestrator.outcomes import estimate_tokens, prompt_key, tokens_from_chars
from studio.models import RecordedOutcome
from workers.replay.store import Recording

FIELDS = (
    "source", "model", "primitive", "item_id", "response", "score", "prompt_tokens", "completion_tokens", "cost_usd",
    "latency_s", "prompt_chars",
)  # fmt: skip

Key = tuple[str, str, bool, str]  # model, primitive, by item id?, item id or prompt hash


class DatabaseStore:
    """Looks recordings up by index and keeps the ones found in a bounded LRU (a recording
    is immutable: re-importing an item replaces it with the same facts). Misses are not
    remembered, so an outcome imported later is found. Safe to share between threads."""

    def __init__(self, cache_size: int = 20_000) -> None:
        self._size = cache_size
        self._cache: OrderedDict[Key, Recording] = OrderedDict()
        self._lock = threading.Lock()

    def find(self, model: str, primitive: str, *, item_id: str | None, prompt: str) -> Recording | None:
        key: Key = (model, primitive, item_id is not None, item_id if item_id is not None else prompt_key(prompt))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        rows = RecordedOutcome.objects.filter(model=model, primitive=primitive)
        rows = rows.filter(item_id=key[3]) if key[2] else rows.filter(prompt_sha256=key[3])
        row = rows.order_by("source").annotate(prompt_chars=Length("prompt")).values(*FIELDS).first()
        if row is None:
            return None
        recording = _recording(row)
        self._keep({key: recording})
        return recording

    def prefetch(self, wanted: Iterable[tuple[str, str, str]]) -> int:
        """Load the recordings of (model, primitive, item id) triples in one query, so the
        calls that follow find them in memory. Returns how many were loaded."""
        with self._lock:
            missing = {triple for triple in wanted if (triple[0], triple[1], True, triple[2]) not in self._cache}
        if not missing:
            return 0
        # One index range per (model, primitive) with its item ids: `outcome_by_item` serves it.
        groups: dict[tuple[str, str], list[str]] = {}
        for model, primitive, item_id in missing:
            groups.setdefault((model, primitive), []).append(item_id)
        match = Q()
        for (model, primitive), item_ids in groups.items():
            match |= Q(model=model, primitive=primitive, item_id__in=item_ids)
        rows = (
            RecordedOutcome.objects.filter(match)
            .order_by("-source")  # the first source wins, as in find(): it is written last
            .annotate(prompt_chars=Length("prompt"))
            .values(*FIELDS)
        )
        found = {(row["model"], row["primitive"], True, row["item_id"]): _recording(row) for row in rows}
        self._keep(found)
        return len(found)

    def _keep(self, recordings: dict[Key, Recording]) -> None:
        with self._lock:
            self._cache.update(recordings)
            for key in recordings:
                self._cache.move_to_end(key)
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)


def _recording(row: dict[str, Any]) -> Recording:
    prompt_tokens = row["prompt_tokens"]
    if prompt_tokens is None:
        prompt_tokens = tokens_from_chars(row["prompt_chars"] or 0)
    completion_tokens = row["completion_tokens"]
    if completion_tokens is None:
        completion_tokens = estimate_tokens(row["response"])
    return Recording(
        source=row["source"],
        item_id=row["item_id"],
        model=row["model"],
        primitive=row["primitive"],
        response=row["response"],
        score=row["score"],
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=float(row["cost_usd"]) if row["cost_usd"] is not None else None,
        latency_s=row["latency_s"],
    )
