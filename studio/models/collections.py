"""Collections: chosen tasks × chosen (model, primitive) pairs of a pool, run through the real
provider path and kept as `RecordedOutcome` rows whose source is the collection's."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from studio.models.jobs import Job


class Collection(Job):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="collections")
    pool = models.ForeignKey("studio.ModelPool", on_delete=models.PROTECT, related_name="collections")
    name = models.CharField(max_length=100)
    source = models.CharField(max_length=50, unique=True, help_text="the RecordedOutcome source of its cells")
    budget_usd = models.DecimalField(max_digits=14, decimal_places=6)
    spent_usd = models.DecimalField(max_digits=16, decimal_places=10, default=0)
    calibrates = models.BooleanField(
        default=False, help_text="once it succeeds, its outcomes become the pool's calibration (calibration_source)"
    )
    max_concurrency = models.PositiveSmallIntegerField(default=4, help_text="calls in flight per endpoint")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="the last sign of life of its runner")

    class Meta(Job.Meta):
        constraints = [
            *Job.Meta.constraints,
            models.CheckConstraint(condition=Q(budget_usd__gt=0), name="collection_budget_positive"),
            models.CheckConstraint(condition=Q(max_concurrency__gte=1), name="collection_concurrency_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.source})"


class CellStatus(models.TextChoices):
    PENDING = "pending"
    STARTED = "started"  # its call was sent; a runner that died left it here, paid but unrecorded
    RECORDED = "recorded"
    FAILED = "failed"  # the provider failed it after its retries


class CollectionCell(models.Model):
    """One (task, endpoint, primitive) of a collection, journaled around its provider call."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="cells")
    task = models.ForeignKey("studio.Task", on_delete=models.PROTECT, related_name="+")
    endpoint = models.ForeignKey("studio.ModelEndpoint", on_delete=models.PROTECT, related_name="+")
    primitive = models.CharField(max_length=50)
    status = models.CharField(max_length=20, choices=CellStatus.choices, default=CellStatus.PENDING)
    starts = models.PositiveSmallIntegerField(default=0, help_text="how many times its call was sent")
    cost_usd = models.DecimalField(max_digits=16, decimal_places=10, null=True, blank=True)
    error = models.TextField(blank=True)
    outcome = models.ForeignKey(
        "studio.RecordedOutcome", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "task", "endpoint", "primitive"], name="cell_unique"),
        ]
        indexes = [models.Index(fields=["collection", "status"], name="cell_by_status")]

    def __str__(self) -> str:
        return f"{self.collection_id}: task {self.task_id} × {self.endpoint_id}/{self.primitive}"
