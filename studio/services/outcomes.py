"""Loading canonical outcome files into RecordedOutcome, and the replay pool they make."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import islice
from pathlib import Path
from typing import Any

from django.db import transaction

from orchestrator.outcomes import (
    OutcomeFormatError,
    OutcomeRecord,
    cost_from_prices,
    prompt_key,
    read_outcomes,
)
from studio.errors import ApplicationError
from studio.models import Admissibility, ModelEndpoint, ModelPool, OutcomeImport, Primitive, RecordedOutcome

BATCH = 2000
UPDATED_FIELDS = [
    "split",
    "benchmark",
    "domain",
    "prompt",
    "prompt_sha256",
    "gold",
    "response",
    "score",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s",
]
Prices = dict[str, dict[str, float]]


@dataclass
class ImportReport:
    file_name: str
    records: int = 0
    skipped_as_already_imported: bool = False
    costs_computed: int = 0
    models: set[str] = field(default_factory=set)
    pairs: set[tuple[str, str]] = field(default_factory=set)
    pool: str = ""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_prices(path: Path | None) -> Prices:
    if path is None:
        return {}
    try:
        prices = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ApplicationError(f"Cannot read the price table {path}: {exc}") from None
    for model, entry in prices.items():
        if not isinstance(entry, dict) or not {"input_per_mtok", "output_per_mtok"} <= entry.keys():
            raise ApplicationError(f"{path}: the price of {model!r} needs input_per_mtok and output_per_mtok.")
    return prices


def _row(record: OutcomeRecord, prices: Prices, report: ImportReport) -> RecordedOutcome:
    cost = record.cost_usd
    if cost is None and record.model in prices:
        cost = cost_from_prices(record.tokens_in, record.tokens_out, prices[record.model])
        report.costs_computed += 1
    report.models.add(record.model)
    report.pairs.add((record.model, record.primitive))
    return RecordedOutcome(
        source=record.source,
        item_id=record.item_id,
        split=record.split or "",
        benchmark=record.benchmark,
        domain=record.domain,
        prompt=record.prompt,
        prompt_sha256=prompt_key(record.prompt),
        gold=record.gold,
        model=record.model,
        primitive=record.primitive,
        response=record.response,
        score=record.score,
        prompt_tokens=record.prompt_tokens,
        completion_tokens=record.completion_tokens,
        cost_usd=Decimal(repr(cost)) if cost is not None else None,
        latency_s=record.latency_s,
    )


def _batches(rows: Iterable[RecordedOutcome], size: int) -> Iterator[list[RecordedOutcome]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        yield batch


def replay_pool_ensure(*, pool_name: str, pairs: Iterable[tuple[str, str]], prices: Prices) -> ModelPool:
    """A `replay/<model>` endpoint per recorded model, admissible with each recorded primitive."""
    pool, _ = ModelPool.objects.get_or_create(
        name=pool_name,
        defaults={"description": "Real recorded model outcomes, replayed offline (replay/<model>)."},
    )
    for model, primitive_name in sorted(set(pairs)):
        price = prices.get(model, {})
        endpoint, _ = ModelEndpoint.objects.get_or_create(
            pool=pool,
            name=model,
            defaults={
                "model": f"replay/{model}",
                "input_cost_per_mtok": price.get("input_per_mtok"),
                "output_cost_per_mtok": price.get("output_per_mtok"),
            },
        )
        primitive, _ = Primitive.objects.get_or_create(name=primitive_name)
        Admissibility.objects.get_or_create(endpoint=endpoint, primitive=primitive)
    return pool


@transaction.atomic
def outcomes_import(
    *,
    path: Path,
    prices: Prices,
    pool_name: str,
    force: bool = False,
    progress: Callable[[int], Any] | None = None,
) -> ImportReport:
    """Load one canonical file (all of it or, on a format error, none of it). Idempotent:
    a file already imported with the same content is skipped unless `force`."""
    report = ImportReport(file_name=path.name, pool=pool_name)
    digest = file_sha256(path)
    if not force and OutcomeImport.objects.filter(sha256=digest).exists():
        report.skipped_as_already_imported = True
        return report
    rows = (_row(record, prices, report) for record in read_outcomes(path))
    try:
        for batch in _batches(rows, BATCH):
            RecordedOutcome.objects.bulk_create(
                batch,
                update_conflicts=True,
                unique_fields=["source", "item_id", "model", "primitive"],
                update_fields=UPDATED_FIELDS,
            )
            report.records += len(batch)
            if progress is not None:
                progress(len(batch))
    except OutcomeFormatError as exc:
        raise ApplicationError(f"Nothing was imported from {path.name}: {exc}") from None
    pool = replay_pool_ensure(pool_name=pool_name, pairs=report.pairs, prices=prices)
    OutcomeImport.objects.update_or_create(
        sha256=digest, defaults={"file_name": path.name, "records": report.records, "pool": pool}
    )
    return report
