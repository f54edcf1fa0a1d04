"""What a request reads of the studio's set-up, cached in each process: a pool's admissible
pairs with their rows, the pool a name stands for, the default policy (/v1's fast path), and
the user an API token stands for.

Any change to a pool, an endpoint, a primitive, an admissibility, a checkpoint, an API token
or a user, in any process, bumps a generation number in the cache (Redis; signals on those
models: a bulk `.update()` of one of them must call `config_changed`), and each entry is kept
for one generation only. So a request reads one cache key, not the rows, and never acts on a set-up older than
the last change. With the cache away, nothing is cached: the rows are read every time.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.cache import cache
from django.db import transaction
from django.db.models import QuerySet
from django.db.models.signals import post_delete, post_save

from orchestrator.core.protocol import Pair, PairRef
from studio.crypto import decrypt_secret
from studio.models import Admissibility, ApiToken, Checkpoint, ModelEndpoint, ModelPool, Primitive, User

log = logging.getLogger(__name__)

GENERATION_KEY = "orchestra:config-generation"
T = TypeVar("T")
_entries: dict[tuple[Any, ...], tuple[int, Any]] = {}
_UNREAD = object()
_current: contextvars.ContextVar[Any] = contextvars.ContextVar("config_generation", default=_UNREAD)


@dataclass(frozen=True)
class PairRows:
    """An admissible pair's rows, and its endpoint's API key, decrypted."""

    row: Admissibility
    api_key: str | None


@dataclass(frozen=True)
class PoolView:
    pool_id: int
    pairs: tuple[Pair, ...]
    by_pair: dict[tuple[int, str], PairRows]

    def primitive_id(self, name: str | None) -> int | None:
        """The id of a primitive of the pool's pairs, by name."""
        if name is None:
            return None
        return next(found.row.primitive_id for (_, primitive), found in self.by_pair.items() if primitive == name)


def generation() -> int | None:
    """The set-up's generation; None when the cache cannot say (then nothing is cached)."""
    try:
        value = cache.get(GENERATION_KEY)
        if value is None:
            cache.add(GENERATION_KEY, 1, timeout=None)
            value = cache.get(GENERATION_KEY)
        return int(value) if value is not None else None
    except Exception:
        log.warning("the cache is away: the set-up's rows are read every time", exc_info=True)
        return None


def config_changed(**_: Any) -> None:
    """A pool, endpoint, primitive, admissibility, checkpoint, token or user changed: drop every cached entry,
    here at once and everywhere once the change commits (bumped before, another process could
    cache the rows as they were under the new generation)."""
    _entries.clear()
    transaction.on_commit(_bump, robust=True)


def _bump() -> None:
    _entries.clear()
    try:
        cache.add(GENERATION_KEY, 1, timeout=None)
        cache.incr(GENERATION_KEY)
    except Exception:
        log.warning("the cache is away: other processes may read a set-up cached before this change", exc_info=True)


def connect_signals() -> None:
    for model in (ModelPool, ModelEndpoint, Primitive, Admissibility, Checkpoint, ApiToken, User):
        post_save.connect(config_changed, sender=model, dispatch_uid=f"config-changed-save-{model.__name__}")
        post_delete.connect(config_changed, sender=model, dispatch_uid=f"config-changed-delete-{model.__name__}")


@contextlib.contextmanager
def one_generation() -> Iterator[None]:
    """Within it, `cached` reads the generation once (one cache round trip per request)."""
    token = _current.set(generation())
    try:
        yield
    finally:
        _current.reset(token)


def cached(key: tuple[Any, ...], read: Callable[[], T], *, keep: Callable[[T], bool] = lambda value: True) -> T:
    """`read()`, kept for the current generation if `keep(value)`."""
    current = _current.get() if _current.get() is not _UNREAD else generation()
    if current is None:
        return read()
    found = _entries.get(key)
    if found is not None and found[0] == current:
        return found[1]
    value = read()
    if keep(value):
        _entries[key] = (current, value)
    return value


def _float(value: object) -> float | None:
    return float(value) if value is not None else None  # type: ignore[arg-type]


def admissible_rows(pool_id: int | None) -> QuerySet[Admissibility]:
    """The pool's admissible pairs' rows, with their endpoints and primitives, in the policy's order."""
    return (
        Admissibility.objects.filter(endpoint__pool_id=pool_id, allowed=True, endpoint__enabled=True)
        .select_related("endpoint", "primitive")
        .order_by("endpoint_id", "primitive__name")
    )


def pair_of(row: Admissibility) -> Pair:
    """The pair as a policy sees it."""
    return Pair(
        ref=PairRef(row.endpoint_id, row.primitive.name),
        model=row.endpoint.model,
        input_cost_per_mtok=_float(row.endpoint.input_cost_per_mtok),
        output_cost_per_mtok=_float(row.endpoint.output_cost_per_mtok),
        context_window=row.endpoint.context_window,
        descriptors=row.endpoint.descriptors,
    )


def _pool_view(pool_id: int) -> PoolView:
    rows = list(admissible_rows(pool_id))
    by_pair = {
        (row.endpoint_id, row.primitive.name): PairRows(
            row=row,
            api_key=decrypt_secret(row.endpoint.api_key_encrypted) if row.endpoint.api_key_encrypted else None,
        )
        for row in rows
    }
    return PoolView(pool_id=pool_id, pairs=tuple(pair_of(row) for row in rows), by_pair=by_pair)


def pool_view(pool_id: int) -> PoolView:
    """The pool's admissible pairs (as `admissible_pairs` gives them to a run's policy) and their rows."""
    return cached(("pool", pool_id), lambda: _pool_view(pool_id))
