"""A pool's own calibration for the learned policy: its probe outcomes as the run's context.

A checkpoint carries the calibration of the pool it was trained on; pairs of a pool it
never saw would get that pool's mean accuracy. Given the pool's probe outcomes (the policy
config's `calibration`), the policy calibrates on them instead, as the unseen-pool
evaluation does (`LearnedMethod.calibrate`): `learning.dataset.make_context` on the probe
table, its prompts embedded with the policy's embedder, no price table (a pair's price is
what its probe calls paid). The probe's pairs become the columns.

A record is {"item_id", "prompt", "domain", "benchmark"?, "model", "primitive", "score",
"cost_usd", "prompt_tokens"?, "completion_tokens"?, "response"?}: the canonical outcome
fields (docs/workers.md, "Recorded outcomes"), checked as `OutcomeRecord.check` checks
them, except that any domain is kept (one outside `DOMAINS` counts in no domain's
statistics); the other canonical fields (`source`, `split`, `gold`, `latency_s`) may be
present and are not read. A model's `replay/` prefix is dropped, as the policy drops it
from the pool's pairs.

The engine makes a policy at every step of a run, and several runs share a pool, while
`make_context` embeds every probe prompt and, from `learning.calibration.MF_MIN_ITEMS` items on, fits
a predictor (seconds): a context is built once per process for the same records and
embedder. The records are checked and hashed only when the context is built: a caller that
can name their version cheaply (the studio: `calibration_key`) spares every later step even
that (a thousand records take some 0.1 s to check and hash).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from orchestrator.learning.dataset import PoolContext, make_context
from orchestrator.outcomes import DOMAINS, FIELD_NAMES, OutcomeRecord
from orchestrator.routing.table import table_from_records

Embedder = Callable[[list[str]], np.ndarray]

REQUIRED = ("item_id", "prompt", "domain", "model", "primitive", "score", "cost_usd")
OPTIONAL = ("benchmark", "prompt_tokens", "completion_tokens", "response")
SOURCE = "calibration"  # the source its items are keyed under in the probe table
BENCHMARK = "calibration"  # a record's benchmark when it names none (calibration reads none)
MAX_ENTRIES = 8  # a few pools' calibrations in use at once

_CACHE: OrderedDict[tuple[str, Embedder], PoolContext] = OrderedDict()
_LOCK = threading.Lock()


def _checked(raw: object) -> tuple[OutcomeRecord, ...]:
    """The config's `calibration` as checked records; ValueError naming the record and the field at fault."""
    if isinstance(raw, str | bytes) or not isinstance(raw, Sequence) or not raw:
        raise ValueError("calibration must be a non-empty list of probe outcome records")
    return tuple(_record(data, index) for index, data in enumerate(raw))


def _record(data: object, index: int) -> OutcomeRecord:
    where = f"calibration[{index}]"
    if not isinstance(data, Mapping):
        raise ValueError(f"{where} must be an object, not {type(data).__name__}")
    missing = [name for name in REQUIRED if name not in data]
    if missing:
        raise ValueError(f"{where}: missing field(s): {', '.join(missing)}")
    unknown = sorted(map(str, data.keys() - set(FIELD_NAMES)))
    if unknown:
        raise ValueError(f"{where}: unknown field(s): {', '.join(unknown)}")
    fields: dict[str, Any] = {name: data.get(name) for name in (*REQUIRED, *OPTIONAL)}
    fields["benchmark"] = fields["benchmark"] or BENCHMARK
    record = OutcomeRecord(source=SOURCE, split=None, gold=None, latency_s=None, **fields)
    if not isinstance(record.domain, str):
        raise ValueError(f"{where}: domain must be a string")
    if record.response is not None and not isinstance(record.response, str):
        raise ValueError(f"{where}: response must be a string or null")
    try:
        replace(record, domain=DOMAINS[0]).check()  # the canonical checks, any domain
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return replace(record, model=record.model.removeprefix("replay/"))


def calibration_context(raw: object, embedder: Embedder, *, key: str | None = None) -> PoolContext:
    """The pool's calibration on the records `raw` (the config's `calibration`), built once per
    process for the same records (or the same `key`, which the caller vouches names them) and
    embedder; ValueError naming the record at fault when they are malformed."""
    records: tuple[OutcomeRecord, ...] | None = None
    if key is None:
        records = _checked(raw)
        key = _digest(records)
    with _LOCK:
        if (key, embedder) in _CACHE:
            _CACHE.move_to_end((key, embedder))
            return _CACHE[(key, embedder)]
    probe = table_from_records(records if records is not None else _checked(raw))
    embeddings = np.asarray(embedder(list(probe.prompts)), dtype=np.float32)
    context = make_context(probe, embeddings, prices=None)  # outside the lock: a duplicate build is harmless
    with _LOCK:
        _CACHE[(key, embedder)] = context
        while len(_CACHE) > MAX_ENTRIES:
            _CACHE.popitem(last=False)
    return context


def _digest(records: Sequence[OutcomeRecord]) -> str:
    digest = hashlib.sha256()
    for record in records:
        digest.update(record.to_json().encode())
        digest.update(b"\n")
    return digest.hexdigest()


def forget() -> None:
    """Drop every calibration built (tests)."""
    with _LOCK:
        _CACHE.clear()
