"""Collections: a pool's chosen (model, primitive) pairs run on chosen tasks, each result kept
as a `RecordedOutcome` whose source is the collection's.

Every cell is journaled around its provider call: `cell_start` marks it started (and counts
the start) before the call, `cell_record` / `cell_fail` write its end in one transaction
with the outcome row and the collection's spend. So a runner that dies leaves its in-flight
cells `started`: the next runner calls them again (their outcome was never kept), skips every
recorded cell (no repeated call), and books each such call as spent at the dearest cost
its pair has had, since the provider may have billed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from orchestrator.outcomes import prompt_key
from studio import queues
from studio.crypto import decrypt_secret
from studio.errors import Conflict, Invalid, NotFound
from studio.models import (
    JOB_ACTIVE,
    Admissibility,
    CellStatus,
    Collection,
    CollectionCell,
    JobStatus,
    ModelPool,
    RecordedOutcome,
    Task,
    User,
)
from studio.services.jobs import job_end, job_progress, job_start
from studio.services.verification import ITEM_KEYS

MAX_CELLS = 100_000
MAX_CONCURRENCY = 64


def dollars(value: float) -> Decimal:
    """A budget as the column keeps it (to the micro-dollar); a 422 unless that is positive."""
    try:
        budget = Decimal(str(value)).quantize(Decimal("0.000001"))
    except (ArithmeticError, ValueError):
        raise Invalid("budget_usd", f"The budget must be a number of dollars, not {value!r}.") from None
    if not budget > 0 or budget >= Decimal("1e8"):
        raise Invalid("budget_usd", "The budget must be between $0.000001 and $100,000,000.")
    return budget


def item_id_of(task: Task) -> str:
    """The item id a task's outcomes are kept under: its recorded item's, else `task-<id>`."""
    return str(task.metadata.get("item_id") or f"task-{task.pk}")


@transaction.atomic
def collection_create(
    *,
    owner: User,
    pool_id: int,
    task_ids: Sequence[int],
    pairs: Sequence[tuple[int, str]],
    budget_usd: float,
    max_concurrency: int = 4,
    name: str = "",
    calibrates: bool = False,
    enqueue: bool = True,
) -> Collection:
    """A queued collection of every task × pair cell (pairs: (endpoint id, primitive name),
    each admissible in the pool). A real endpoint needs tasks with a gold answer and a
    checker; a replay endpoint, tasks of recorded items. A calibrating collection (`calibrates`)
    makes its outcomes the pool's calibration once it succeeds: the probe outcomes the live
    learned policy calibrates on (docs/collect.md)."""
    pool = ModelPool.objects.filter(pk=pool_id).first()
    if pool is None:
        raise Invalid("pool_id", f"There is no pool {pool_id}.")
    budget = dollars(budget_usd)
    if not 1 <= max_concurrency <= MAX_CONCURRENCY:
        raise Invalid("max_concurrency", f"Calls in flight per endpoint are 1 to {MAX_CONCURRENCY}.")
    chosen = sorted(set(pairs))
    if not chosen:
        raise Invalid("pairs", "Choose at least one (endpoint, primitive) pair.")
    allowed = {
        (row.endpoint_id, row.primitive.name): row.endpoint
        for row in Admissibility.objects.filter(endpoint__pool=pool, allowed=True, endpoint__enabled=True)
        .select_related("endpoint", "primitive")
    }  # fmt: skip
    missing = [f"{endpoint}/{primitive}" for endpoint, primitive in chosen if (endpoint, primitive) not in allowed]
    if missing:
        raise Invalid("pairs", f"Not admissible in pool {pool.name!r}: {', '.join(missing)}.")
    wanted = list(dict.fromkeys(task_ids))
    tasks = {task.pk: task for task in Task.objects.filter(pk__in=wanted)}
    unknown = [str(pk) for pk in wanted if pk not in tasks]
    if not wanted or unknown:
        raise Invalid("task_ids", f"Unknown task(s): {', '.join(unknown)}." if unknown else "Choose at least one task.")
    if len(wanted) * len(chosen) > MAX_CELLS:
        raise Invalid("task_ids", f"{len(wanted)} tasks × {len(chosen)} pairs is over {MAX_CELLS:,} cells.")
    real = any(not allowed[pair].model.startswith("replay/") for pair in chosen)
    replay = any(allowed[pair].model.startswith("replay/") for pair in chosen)
    for pk in wanted:
        task = tasks[pk]
        if real and not (task.gold_answer and (task.checker or task.benchmark)):
            raise Invalid("task_ids", f"Task {pk} has no gold answer and checker, so its answers cannot be scored.")
        if not task.domain:
            raise Invalid("task_ids", f"Task {pk} has no domain; the policy's statistics are kept per domain.")
        if replay and not task.metadata.get("item_id"):
            raise Invalid("task_ids", f"Task {pk} is not a recorded item, so a replay endpoint cannot answer it.")
    items = [item_id_of(tasks[pk]) for pk in wanted]
    if len(set(items)) < len(items):
        twice = sorted({item for item in items if items.count(item) > 1})
        raise Invalid("task_ids", f"Two tasks share the item id(s) {', '.join(twice[:5])}.")
    collection = Collection.objects.create(
        owner=owner, pool=pool, name=name or f"{pool.name} × {len(wanted)} tasks",
        source=f"pending-{timezone.now():%s%f}",
        budget_usd=budget, max_concurrency=max_concurrency, calibrates=calibrates,
    )  # fmt: skip
    collection.source = f"collection-{collection.pk}"
    collection.save(update_fields=["source"])
    CollectionCell.objects.bulk_create(
        CollectionCell(collection=collection, task_id=pk, endpoint_id=endpoint, primitive=primitive)
        for pk in wanted
        for endpoint, primitive in chosen
    )
    if enqueue:
        transaction.on_commit(lambda: queues.send(queues.COLLECT, collection.pk))
    return collection


@transaction.atomic
def collection_resume(*, collection_id: int, budget_usd: float | None = None) -> Collection:
    """Queue a stopped, failed or cancelled collection again (with a larger budget, if given)."""
    collection = Collection.objects.select_for_update().filter(pk=collection_id).first()
    if collection is None:
        raise NotFound(f"There is no collection {collection_id}.")
    if collection.status in JOB_ACTIVE:
        raise Conflict(f"Collection {collection_id} is {collection.status} already.")
    quiet = timezone.now() - timedelta(seconds=settings.ORCHESTRA_COLLECTION_QUIET_S)
    in_flight = collection.cells.filter(status=CellStatus.STARTED).count()
    if in_flight and collection.heartbeat_at is not None and collection.heartbeat_at > quiet:
        raise Conflict(
            f"Collection {collection_id} still has {in_flight} call(s) in flight from its last runner; "
            "resume it once they have ended (in a few seconds)."
        )
    if budget_usd is not None:
        budget = dollars(budget_usd)
        if budget <= collection.spent_usd:
            raise Invalid("budget_usd", f"The budget must be above the ${collection.spent_usd:.6f} spent.")
        collection.budget_usd = budget
    collection.status, collection.message, collection.finished_at = JobStatus.QUEUED, "", None
    collection.save(update_fields=["status", "message", "finished_at", "budget_usd"])
    transaction.on_commit(lambda: queues.send(queues.COLLECT, collection.pk))
    return collection


def collection_cancel(*, collection_id: int) -> Collection:
    """Stop a collection: its runner sees it at its next cell and sends no more calls."""
    with transaction.atomic():
        collection = Collection.objects.select_for_update().filter(pk=collection_id).first()
        if collection is None:
            raise NotFound(f"There is no collection {collection_id}.")
        collection = job_end(Collection, collection_id, status=JobStatus.CANCELLED, message="Cancelled.") or collection
    return collection


# --- the runner's side (workers.collection) ---


@dataclass(frozen=True)
class CellWork:
    """One cell as its runner needs it: the call and how to score it."""

    cell_id: int
    endpoint_id: int
    model: str
    api_base: str | None
    api_key: str | None = field(repr=False)
    input_cost_per_mtok: float | None
    output_cost_per_mtok: float | None
    primitive: str
    item_id: str
    prompt: str
    gold: str
    checker: str
    benchmark: str
    domain: str
    item: dict[str, Any]  # what the checker may read (prompt, entry point, tests)
    request: dict[str, Any]  # the primitive's input fields besides the prompt


def _float(value: Decimal | None) -> float | None:
    return float(value) if value is not None else None


def collection_start(*, collection_id: int, worker: str = "") -> Collection | None:
    """Take a queued (or running, after its runner died) collection; None when it has ended.
    Cells a dead runner left started are booked as spent at their pair's dearest cost."""
    with transaction.atomic():
        collection = job_start(Collection, collection_id, worker=worker, resumes=True)
        if collection is None:
            return None
        orphans = list(collection.cells.filter(status=CellStatus.STARTED).values_list("endpoint_id", "primitive"))
        dearest = {
            (row["endpoint_id"], row["primitive"]): row["top"]
            for row in collection.cells.filter(cost_usd__isnull=False)
            .values("endpoint_id", "primitive")
            .annotate(top=Max("cost_usd"))
        }
        lost = sum((dearest.get(pair) or Decimal(0) for pair in orphans), Decimal(0))
        collection.cells.filter(status=CellStatus.STARTED).update(status=CellStatus.PENDING)
        collection.spent_usd += lost
        collection.heartbeat_at = timezone.now()
        collection.save(update_fields=["spent_usd", "heartbeat_at"])
    return collection


def collection_work(*, collection_id: int) -> list[CellWork]:
    """The cells still to call, each with what its call and its scoring need."""
    cells = (
        CollectionCell.objects.filter(collection_id=collection_id, status=CellStatus.PENDING)
        .select_related("task", "endpoint")
        .order_by("id")
    )
    keys: dict[int, str | None] = {}
    out = []
    for cell in cells:
        task, endpoint = cell.task, cell.endpoint
        if endpoint.pk not in keys:
            keys[endpoint.pk] = decrypt_secret(endpoint.api_key_encrypted) if endpoint.api_key_encrypted else None
        meta = task.metadata
        out.append(
            CellWork(
                cell_id=cell.pk, endpoint_id=endpoint.pk, model=endpoint.model, api_base=endpoint.api_base or None,
                api_key=keys[endpoint.pk], input_cost_per_mtok=_float(endpoint.input_cost_per_mtok),
                output_cost_per_mtok=_float(endpoint.output_cost_per_mtok), primitive=cell.primitive,
                item_id=item_id_of(task), prompt=task.text, gold=task.gold_answer,
                checker=task.checker or task.benchmark, benchmark=task.benchmark or task.checker, domain=task.domain,
                item={"prompt": task.text, **{k: meta[k] for k in ITEM_KEYS if k in meta}},
                request={k: meta[k] for k in ("tests", "entry_point", "tools", "context") if k in meta},
            )
        )  # fmt: skip
    return out


START_CELL = """
    UPDATE studio_collectioncell SET status = 'started', starts = starts + 1, updated_at = now()
    WHERE id = %s AND status = 'pending'
      AND EXISTS (SELECT 1 FROM studio_collection c WHERE c.id = collection_id AND c.status = 'running')
"""


def cell_start(*, cell_id: int) -> bool:
    """Journal a cell's call before it is sent (one statement); False when the collection has
    stopped or the cell is not pending (recorded meanwhile, or taken by another runner)."""
    with connection.cursor() as cursor:
        cursor.execute(START_CELL, [cell_id])
        return cursor.rowcount == 1


@dataclass(frozen=True)
class CellResult:
    """What a cell's call gave: a scored answer, or a failure."""

    score: float | None  # None: the call failed
    response: str | None
    prompt_tokens: int | None  # None: not known (a replayed recording that holds none)
    completion_tokens: int | None
    cost_usd: float
    latency_s: float
    error: str = ""


def cells_finish(*, collection_id: int, results: Sequence[tuple[CellWork, CellResult]]) -> Decimal:
    """Keep the ends of some cells of one collection in one transaction: an outcome row for each
    with a score, the cells' status and cost, and their cost added to the collection's spend;
    returns the spend. Idempotent: a cell already ended changes nothing."""
    with transaction.atomic():
        collection = Collection.objects.select_for_update().only("source", "spent_usd").get(pk=collection_id)
        ids = [work.cell_id for work, _ in results]
        ended = set(
            CollectionCell.objects.select_for_update()
            .filter(pk__in=ids, status__in=[CellStatus.RECORDED, CellStatus.FAILED])
            .values_list("pk", flat=True)
        )
        todo = [(work, result) for work, result in results if work.cell_id not in ended]
        if not todo:
            return collection.spent_usd
        costs = {work.cell_id: Decimal(str(round(result.cost_usd, 10))) for work, result in todo}
        scored = [(work, result) for work, result in todo if result.score is not None]
        rows = RecordedOutcome.objects.bulk_create(
            [
                RecordedOutcome(
                    source=collection.source, item_id=work.item_id, model=work.model.removeprefix("replay/"),
                    primitive=work.primitive, split="", benchmark=work.benchmark or "custom", domain=work.domain,
                    prompt=work.prompt, prompt_sha256=prompt_key(work.prompt), gold=work.gold or None,
                    response=result.response, score=result.score or 0.0, prompt_tokens=result.prompt_tokens,
                    completion_tokens=result.completion_tokens, cost_usd=costs[work.cell_id],
                    latency_s=result.latency_s,
                )  # fmt: skip
                for work, result in scored
            ],
            # kept already by an earlier runner whose cell row lost the race: this result replaces it
            update_conflicts=True, unique_fields=["source", "item_id", "model", "primitive"],
            update_fields=["response", "score", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s"],
        )  # fmt: skip
        outcome_of = {work.cell_id: row.pk for (work, _), row in zip(scored, rows, strict=True)}
        now = timezone.now()
        with connection.cursor() as cursor:  # one statement a cell, pipelined (bulk_update's CASE costs more)
            cursor.executemany(
                "UPDATE studio_collectioncell SET status = %s, cost_usd = %s, error = %s, outcome_id = %s, "
                "updated_at = %s WHERE id = %s",
                [
                    (CellStatus.RECORDED if work.cell_id in outcome_of else CellStatus.FAILED, costs[work.cell_id],
                     result.error[:2000], outcome_of.get(work.cell_id), now, work.cell_id)
                    for work, result in todo
                ],
            )  # fmt: skip
        collection.spent_usd += sum(costs.values(), Decimal(0))
        collection.heartbeat_at = now
        collection.save(update_fields=["spent_usd", "heartbeat_at"])
    return collection.spent_usd


@transaction.atomic
def collection_end(*, collection_id: int, status: str, message: str = "") -> None:
    """Record how a running collection ended (a cancelled one stays cancelled). A calibrating
    one that succeeded becomes its pool's calibration source."""
    collection = Collection.objects.select_for_update().filter(pk=collection_id).first()
    if collection is None or collection.status != JobStatus.RUNNING:
        return
    if status == JobStatus.SUCCEEDED and collection.calibrates:
        ModelPool.objects.filter(pk=collection.pool_id).update(calibration_source=collection.source)
        message = f"{message} The pool {collection.pool.name!r} now calibrates on {collection.source}.".strip()
    total, done, _ = cells_progress(collection_id=collection_id)
    job_end(
        Collection, collection_id, status=status, message=message, progress=done / max(1, total),
        heartbeat_at=timezone.now(),
    )  # fmt: skip


def collection_progress(*, collection_id: int) -> str:
    """Record the share of a running collection's cells that ended (its runner calls this once
    a second); returns its status, "" when it is gone."""
    total, done, _ = cells_progress(collection_id=collection_id)
    running = job_progress(Collection, collection_id, progress=done / max(1, total), message="collecting")
    return str(running.status) if running is not None else collection_status(collection_id=collection_id)


def collection_status(*, collection_id: int) -> str:
    """Its status; "" when it is gone (deleted, or a message from another database)."""
    return str(Collection.objects.filter(pk=collection_id).values_list("status", flat=True).first() or "")


def collections_resume_quiet(*, older_than_s: float | None = None) -> int:
    """Queue again the running collections whose runner has given no sign of life for
    `older_than_s` (ORCHESTRA_COLLECTION_QUIET_S; it died with its worker), so they resume;
    each is sent once per quiet spell. Called by the recovery sweep (`workers.runs_recover`)."""
    quiet_s = settings.ORCHESTRA_COLLECTION_QUIET_S if older_than_s is None else older_than_s
    cutoff = timezone.now() - timedelta(seconds=quiet_s)
    rows = Collection.objects.filter(status=JobStatus.RUNNING).filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True)
    )
    ids = list(rows.values_list("pk", flat=True))
    Collection.objects.filter(pk__in=ids).update(heartbeat_at=timezone.now())
    for collection_id in ids:
        queues.send(queues.COLLECT, collection_id)
    return len(ids)


def cells_progress(*, collection_id: int) -> tuple[int, int, int]:
    """(cells, cells ended: recorded or failed, cells failed) of a collection."""
    counts = CollectionCell.objects.filter(collection_id=collection_id).aggregate(
        total=Count("id"),
        ended=Count("id", filter=Q(status__in=[CellStatus.RECORDED, CellStatus.FAILED])),
        failed=Count("id", filter=Q(status=CellStatus.FAILED)),
    )
    return int(counts["total"]), int(counts["ended"]), int(counts["failed"])


def dearest_costs(*, collection_id: int) -> dict[tuple[int, str], float]:
    """(endpoint id, primitive) -> the dearest call a cell of that pair has cost so far."""
    rows = (
        CollectionCell.objects.filter(collection_id=collection_id, cost_usd__isnull=False)
        .values("endpoint_id", "primitive")
        .annotate(top=Max("cost_usd"))
    )
    return {(row["endpoint_id"], row["primitive"]): float(row["top"]) for row in rows}


def collection_heartbeat(*, collection_id: int) -> None:
    Collection.objects.filter(pk=collection_id).update(heartbeat_at=timezone.now())
