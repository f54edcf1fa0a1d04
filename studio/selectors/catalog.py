"""What a new run may be asked for: policies, presets, checkers, domains, and the recorded
items a composite task can be made of."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from orchestrator.benchmark_tasks import BENCHMARKS
from orchestrator.core.checking import checker_names
from orchestrator.policies import COST_PRESETS, policy_names
from studio.models import Domain, ModelPool, RecordedOutcome, User
from studio.selectors.runs import task_benchmarks
from studio.services.policies import CHECKPOINTED, default_policy


def run_options(*, user: User) -> dict[str, Any]:
    usable = ModelPool.objects.filter(endpoints__enabled=True, endpoints__admissibilities__allowed=True).distinct()
    pool = usable.filter(name=settings.ORCHESTRA_DEFAULT_POOL).first() or usable.order_by("id").first()
    return {
        "policies": [{"name": name, "needs_checkpoint": name in CHECKPOINTED} for name in policy_names()],
        "default_policy": default_policy(),
        "presets": COST_PRESETS,
        "checkers": checker_names(),
        "domains": [choice.value for choice in Domain],
        "default_pool_id": pool.pk if pool else None,
        "sources": list(RecordedOutcome.objects.order_by("source").values_list("source", flat=True).distinct()),
        "benchmarks": task_benchmarks(user=user),
        "vendored_benchmarks": list(BENCHMARKS),
    }


def recorded_item_list(*, source: str = "", benchmark: str = "", domain: str = "", search: str = "") -> QuerySet:
    """One row per recorded item (source, item_id), however many pairs recorded it."""
    rows = RecordedOutcome.objects.all()
    if source:
        rows = rows.filter(source=source)
    if benchmark:
        rows = rows.filter(benchmark=benchmark)
    if domain:
        rows = rows.filter(domain=domain)
    if search:
        rows = rows.filter(prompt__icontains=search)
    return (
        rows.order_by("source", "item_id")
        .distinct("source", "item_id")
        .values("source", "item_id", "split", "benchmark", "domain", "prompt")
    )
