"""Recordings from Postgres (the RecordedOutcome table), for the Celery workers."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from orchestrator.outcomes import estimate_tokens, prompt_key, tokens_from_chars
from providers.replay.store import Recording
from studio.selectors.outcomes import recorded_outcome, recorded_outcomes

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
        row = recorded_outcome(
            model=model, primitive=primitive, item_id=item_id, prompt_sha256="" if key[2] else key[3]
        )
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
        # The first source wins, as in find(): it comes last, so it is written last.
        rows = recorded_outcomes(missing)
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
    recorded = (row["prompt_tokens"] is not None, row["completion_tokens"] is not None)
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
        tokens_recorded=recorded,
    )
