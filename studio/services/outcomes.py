"""Loading canonical outcome files into RecordedOutcome, and the replay pool they make."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import islice
from pathlib import Path
from typing import Any

from django.db import connection, models, transaction
from psycopg import sql

from orchestrator.outcomes import (
    OutcomeFormatError,
    OutcomeRecord,
    PriceError,
    cost_from_prices,
    prompt_key,
    read_outcomes,
    read_prices,
)
from studio.errors import ApplicationError
from studio.models import Admissibility, ModelEndpoint, ModelPool, OutcomeImport, Primitive, RecordedOutcome

BATCH = 5000  # records staged by COPY, then merged, between two progress reports
KEY = ("source", "item_id", "model", "primitive")  # a record's identity (outcome_unique_record)
COLUMNS = (
    "source",
    "item_id",
    "split",
    "benchmark",
    "domain",
    "prompt",
    "prompt_sha256",
    "gold",
    "model",
    "primitive",
    "response",
    "score",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s",
)
KEY_AT = tuple(COLUMNS.index(name) for name in KEY)
Prices = dict[str, dict[str, float]]


@dataclass
class ImportReport:
    file_name: str
    records: int = 0  # lines read
    duplicates: int = 0  # lines whose record an earlier line of the file also gave: the later one is kept
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
        return read_prices(path)
    except PriceError as exc:
        raise ApplicationError(str(exc)) from None


def _row(record: OutcomeRecord, prices: Prices, report: ImportReport) -> tuple[Any, ...]:
    """The values of `COLUMNS` for one record."""
    cost = record.cost_usd
    if cost is None and record.model in prices:
        cost = cost_from_prices(record.tokens_in, record.tokens_out, prices[record.model])
        report.costs_computed += 1
    report.models.add(record.model)
    report.pairs.add((record.model, record.primitive))
    return (
        record.source,
        record.item_id,
        record.split or "",
        record.benchmark,
        record.domain,
        record.prompt,
        prompt_key(record.prompt),
        record.gold,
        record.model,
        record.primitive,
        record.response,
        record.score,
        record.prompt_tokens,
        record.completion_tokens,
        Decimal(repr(cost)) if cost is not None else None,
        record.latency_s,
    )


def _batches(rows: Iterable[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        yield batch


def _names(names: Iterable[str]) -> sql.Composed:
    return sql.SQL(", ").join(map(sql.Identifier, names))


def _statements(table: str) -> tuple[sql.Composed, sql.Composed, sql.Composed]:
    """(create the staging table, COPY into it, merge it into `table`). The merge upserts: of
    several lines with one record, the last one (as `orchestrator.routing.table.load_table`
    reads a file); a record already in `table` is updated."""
    columns, key = _names(COLUMNS), _names(KEY)
    updates = sql.SQL(", ").join(
        sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(name)) for name in COLUMNS if name not in KEY
    )
    create = sql.SQL(
        "CREATE TEMPORARY TABLE outcome_staging AS SELECT 0::bigint AS line, {columns} FROM {table} WITH NO DATA"
    )
    copy = sql.SQL("COPY outcome_staging (line, {columns}) FROM STDIN")
    merge = sql.SQL(
        "INSERT INTO {table} ({columns}) SELECT DISTINCT ON ({key}) {columns} FROM outcome_staging"
        " ORDER BY {key}, line DESC ON CONFLICT ({key}) DO UPDATE SET {updates}"
    )
    names = {"table": sql.Identifier(table), "columns": columns, "key": key, "updates": updates}
    return create.format(**names), copy.format(**names), merge.format(**names)


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
    create, copy_rows, merge = _statements(RecordedOutcome._meta.db_table)
    seen: set[tuple[str, ...]] = set()
    rows = (_row(record, prices, report) for record in read_outcomes(path))
    with connection.cursor() as wrapper:
        # COPY into a staging table, then one upsert per batch: faster than INSERT statements
        # of the same rows. Dropped at the end; on an error the rollback drops it.
        cursor = wrapper.cursor  # psycopg's own, for COPY
        cursor.execute(create)
        try:
            for batch in _batches(rows, BATCH):
                with cursor.copy(copy_rows) as copy:
                    for row in batch:
                        key = tuple(row[i] for i in KEY_AT)
                        report.duplicates += key in seen
                        seen.add(key)
                        report.records += 1
                        copy.write_row((report.records, *row))
                cursor.execute(merge)
                cursor.execute("TRUNCATE outcome_staging")
                if progress is not None:
                    progress(len(batch))
        except OutcomeFormatError as exc:
            raise ApplicationError(f"Nothing was imported from {path.name}: {exc}") from None
        cursor.execute("DROP TABLE outcome_staging")
    pool = replay_pool_ensure(pool_name=pool_name, pairs=report.pairs, prices=prices)
    OutcomeImport.objects.update_or_create(
        sha256=digest, defaults={"file_name": path.name, "records": report.records, "pool": pool}
    )
    return report


def _record_of(row: RecordedOutcome) -> OutcomeRecord:
    return OutcomeRecord(
        source=row.source, item_id=row.item_id, split=row.split or None, benchmark=row.benchmark,  # type: ignore[arg-type]
        domain=row.domain, prompt=row.prompt, gold=row.gold, model=row.model, primitive=row.primitive,
        response=row.response, score=row.score, prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens, cost_usd=float(row.cost_usd) if row.cost_usd is not None else None,
        latency_s=row.latency_s,
    )  # fmt: skip


def outcome_records(*, sources: Iterable[str]) -> tuple[Iterator[OutcomeRecord], dict[str, int]]:
    """The recorded outcomes of `sources` as canonical records, streamed in a stable order
    (source, item, model, primitive), and how many each source has."""
    wanted = list(sources)
    rows = RecordedOutcome.objects.filter(source__in=wanted)
    counts = {s: n for s, n in rows.values_list("source").annotate(n=models.Count("id")).values_list("source", "n")}
    ordered = rows.order_by("source", "item_id", "model", "primitive").iterator(chunk_size=2000)
    return (_record_of(row) for row in ordered), counts
