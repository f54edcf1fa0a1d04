"""What a fast-path run will be, held in Redis from before its provider call until its record
is written (`studio.services.fast_path`, `studio.services.run_record`).

/v1's fast path calls a pair in the web process and records the run after the answer. Two
things must hold however that goes:

- **No provider call without a record.** Before the call, the run's rows as they stand (its
  attempt running) are held here, with the time after which its caller counts as gone
  (ORCHESTRA_ATTEMPT_STALE_S, as for a worker's attempt). If the web process dies during
  the call, the recovery sweep (`workers.runs_recover`) finds the run past that time and
  records it with its attempt lost (`studio.services.fast_lost`). If this cannot be held
  (Redis away), the request takes the full machinery, which writes its run first.
- **Read-your-writes.** An answer names its run before a worker has written it. A read of a
  run that is not written yet, but held here, waits for it (`wait_recorded`).

Two keys per run, under the cache's prefix, set in one round trip: the rows (`fast-run:<id>`,
expiring well after the sweep's time, so that nothing stays if the sweep is off) and the run's
id in a sorted set scored by that time (`fast-runs`), which the sweep reads. Both go once
the run's record commits (`release`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.cache import cache

log = logging.getLogger(__name__)

POLL_S = 0.005


def _key(run_id: int) -> str:
    return cache.make_key(f"fast-run:{run_id}")  # under the cache's prefix, as its own keys are


def _due_key() -> str:
    return cache.make_key("fast-runs")


def _redis() -> Any:
    """The cache's Redis client; None where the cache is not Redis."""
    backend = getattr(cache, "_cache", None)
    get_client = getattr(backend, "get_client", None)
    return get_client(write=True) if get_client is not None else None


def lease_s() -> float:
    """How long a fast call may run before its caller counts as gone."""
    return float(settings.ORCHESTRA_ATTEMPT_STALE_S)


def hold(run_id: int, payload: str) -> bool:
    """Hold the run's rows (`run_record.payload_dump`) until its record is written; False when
    Redis cannot take them (logged)."""
    redis = _redis()
    if redis is None:
        return False
    lease = lease_s()
    try:
        pipe = redis.pipeline(transaction=True)
        pipe.set(_key(run_id), payload, ex=int(2 * lease + 3600))
        pipe.zadd(_due_key(), {str(run_id): time.time() + lease})
        pipe.execute()
    except Exception:
        log.warning("run %s: Redis took no record of the call; the full machinery takes it", run_id, exc_info=True)
        return False
    return True


def release(run_ids: Iterable[int]) -> None:
    """Forget runs whose record is written. Never raises: what stays expires, and the sweep
    finds such a run recorded already."""
    ids = [int(run_id) for run_id in run_ids]
    redis = _redis()
    if redis is None or not ids:
        return
    try:
        pipe = redis.pipeline(transaction=True)
        pipe.delete(*[_key(run_id) for run_id in ids])
        pipe.zrem(_due_key(), *[str(run_id) for run_id in ids])
        pipe.execute()
    except Exception:
        log.warning("runs %s: could not forget their held records", ids, exc_info=True)


def pending(run_id: int) -> bool:
    """Whether the run was handed out by a fast path and its record is not written yet."""
    redis = _redis()
    if redis is None:
        return False
    try:
        return bool(redis.exists(_key(run_id)))
    except Exception:
        log.warning("run %s: could not ask Redis whether it is being recorded", run_id, exc_info=True)
        return False


def wait_recorded(run_id: int, timeout_s: float | None = None) -> bool:
    """If the run is held here, wait until its record is written (True), or `timeout_s`
    (default ORCHESTRA_FAST_READ_WAIT_S) passes (False). Not held: True at once."""
    limit = settings.ORCHESTRA_FAST_READ_WAIT_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + limit
    while pending(run_id):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


def due(now: float | None = None, limit: int = 500) -> list[tuple[int, str | None]]:
    """Runs whose caller counts as gone: each id, and its held rows (None if they expired)."""
    redis = _redis()
    if redis is None:
        return []
    until = time.time() if now is None else now
    ids = [int(raw) for raw in redis.zrangebyscore(_due_key(), "-inf", until, start=0, num=limit)]
    if not ids:
        return []
    payloads = redis.mget([_key(run_id) for run_id in ids])
    return [
        (run_id, raw.decode() if isinstance(raw, bytes) else raw) for run_id, raw in zip(ids, payloads, strict=True)
    ]
