from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from studio.models.jobs import Job


class CheckpointKind(models.TextChoices):
    POLICY = "policy"
    REWARD_MODEL = "reward_model"


class Checkpoint(models.Model):
    """A trained policy or reward model, with its metrics and where it came from."""

    kind = models.CharField(max_length=20, choices=CheckpointKind.choices)
    name = models.CharField(max_length=200)
    path = models.CharField(max_length=500, help_text="artifact file, relative to DATA_DIR")
    config = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    lineage = models.JSONField(default=dict, blank=True, help_text="data, sources and parents it was trained from")
    parent = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children")
    is_default = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "name"], name="checkpoint_unique_name"),
            models.UniqueConstraint(
                fields=["kind"], condition=Q(is_default=True), name="checkpoint_one_default_per_kind"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


class TrainingJob(Job):
    watch_group = "training"

    kind = models.CharField(max_length=20, choices=CheckpointKind.choices)
    config = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=dict, blank=True, help_text="the latest metrics")
    history = models.JSONField(default=list, blank=True, help_text="metrics over steps, for curves")
    checkpoint = models.ForeignKey(
        Checkpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="training_jobs"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta(Job.Meta):
        indexes = [models.Index(fields=["status", "-created_at"], name="trainingjob_status_created")]

    def __str__(self) -> str:
        return f"{self.kind} training {self.pk} ({self.status})"

    def progress_message(self) -> dict[str, Any]:
        return {**super().progress_message(), "metrics": self.metrics}


class EvaluationRun(Job):
    watch_group = "evaluation"

    config = models.JSONField(default=dict, blank=True)
    report = models.JSONField(default=dict, blank=True)
    checkpoint = models.ForeignKey(
        Checkpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="evaluations"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    def __str__(self) -> str:
        return f"evaluation {self.pk} ({self.status})"
