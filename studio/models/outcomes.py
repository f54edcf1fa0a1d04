from __future__ import annotations

from django.db import models
from django.db.models import Q

from studio.models.runs import Domain


class RecordedOutcome(models.Model):
    """One real recorded (item, model, primitive) outcome: the replay pool's ground truth.

    Fields follow the canonical JSONL format (docs/workers.md, "Recorded outcomes").
    """

    source = models.CharField(max_length=50)
    item_id = models.CharField(max_length=200)
    split = models.CharField(max_length=10, blank=True)
    benchmark = models.CharField(max_length=100)
    domain = models.CharField(max_length=20, choices=Domain.choices)
    prompt = models.TextField()
    prompt_sha256 = models.CharField(max_length=64, help_text="for exact-prompt lookups")
    gold = models.TextField(null=True, blank=True)
    model = models.CharField(max_length=200)
    primitive = models.CharField(max_length=50)
    response = models.TextField(null=True, blank=True)
    score = models.FloatField()
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=16, decimal_places=10, null=True, blank=True)
    latency_s = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "item_id", "model", "primitive"], name="outcome_unique_record"),
            models.CheckConstraint(condition=Q(score__gte=0) & Q(score__lte=1), name="outcome_score_in_range"),
        ]
        indexes = [
            models.Index(fields=["model", "primitive", "item_id"], name="outcome_by_item"),
            models.Index(fields=["model", "primitive", "prompt_sha256"], name="outcome_by_prompt"),
            models.Index(fields=["benchmark"], name="outcome_benchmark"),
            models.Index(fields=["prompt_sha256"], name="outcome_prompt"),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.item_id} {self.model}/{self.primitive}"


class OutcomeImport(models.Model):
    """One canonical outcomes file loaded by `import_outcomes`; a file is loaded once per content."""

    file_name = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64, unique=True)
    records = models.PositiveIntegerField()
    pool = models.ForeignKey(
        "studio.ModelPool", on_delete=models.SET_NULL, null=True, blank=True, related_name="outcome_imports"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.file_name} ({self.records} records)"
