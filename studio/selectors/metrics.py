"""What /metrics reports, read from the database at each scrape: every process (web, worker,
on any host) writes its runs and attempts there, so the figures are the cluster's and survive
restarts, where a per-process counter would not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from studio.models import RUN_ENDED, Attempt, AttemptStatus, Run

# Seconds: a run of one recorded answer takes tens of milliseconds, a decomposed live run minutes.
RUN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
ATTEMPT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
ATTEMPT_ENDED = (AttemptStatus.OK, AttemptStatus.ERROR, AttemptStatus.TIMEOUT)


@dataclass(frozen=True)
class Histogram:
    buckets: list[tuple[float, int]]  # (upper bound, cumulative count), +Inf last
    count: int
    total: float


@dataclass(frozen=True)
class ModelUsage:
    model: str
    calls: dict[str, int]  # attempt status -> count
    cost_usd: float
    tokens_in: int
    tokens_out: int
    latency: Histogram  # of the model's ended attempts


def counts_by_status(rows: QuerySet[Any]) -> dict[str, int]:
    return {status: count for status, count in rows.values_list("status").annotate(n=Count("pk")).order_by()}


def _histogram(rows: QuerySet[Any], bounds: Sequence[float], group: str | None = None) -> dict[str, Histogram]:
    """Cumulative bucket counts of `latency_s` over `rows` (per `group` value), in one query."""
    sums: dict[str, Count | Sum] = {f"le{i}": Count("pk", filter=Q(latency_s__lte=b)) for i, b in enumerate(bounds)}
    sums |= {"n": Count("pk"), "total": Sum("latency_s")}
    grouped = rows.values(group).annotate(**sums).order_by() if group else [rows.aggregate(**sums)]
    out = {}
    for row in grouped:
        buckets = [(bound, int(row[f"le{i}"])) for i, bound in enumerate(bounds)] + [(float("inf"), int(row["n"]))]
        out[str(row[group]) if group else ""] = Histogram(buckets, int(row["n"]), float(row["total"] or 0.0))
    return out


def run_latency() -> Histogram:
    return _histogram(Run.objects.filter(status__in=RUN_ENDED), RUN_BUCKETS)[""]


def model_usage() -> list[ModelUsage]:
    """Per endpoint model (`replay/` kept: a replayed call is not a provider's): its attempts by
    status, what they cost and used, and the latency of those that ended."""
    attempts = Attempt.objects.all()
    totals = {
        row["endpoint__model"]: row
        for row in attempts.values("endpoint__model")
        .annotate(cost=Sum("cost_usd"), tin=Sum("tokens_in"), tout=Sum("tokens_out"))
        .order_by()
    }
    calls: dict[str, dict[str, int]] = {}
    for model, status, n in attempts.values_list("endpoint__model", "status").annotate(n=Count("pk")).order_by():
        calls.setdefault(model, {})[status] = n
    latency = _histogram(attempts.filter(status__in=ATTEMPT_ENDED), ATTEMPT_BUCKETS, group="endpoint__model")
    empty = Histogram([(b, 0) for b in ATTEMPT_BUCKETS] + [(float("inf"), 0)], 0, 0.0)
    return [
        ModelUsage(
            model=model,
            calls=calls.get(model, {}),
            cost_usd=float(row["cost"] or 0),
            tokens_in=int(row["tin"] or 0),
            tokens_out=int(row["tout"] or 0),
            latency=latency.get(model, empty),
        )  # fmt: skip
        for model, row in sorted(totals.items())
    ]


def run_counts() -> dict[str, int]:
    return counts_by_status(Run.objects.all())


def attempt_counts() -> dict[str, int]:
    return counts_by_status(Attempt.objects.all())
