from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


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


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


JOB_ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)  # a job in these has not ended yet


class TrainingJob(models.Model):
    kind = models.CharField(max_length=20, choices=CheckpointKind.choices)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    config = models.JSONField(default=dict, blank=True)
    progress = models.FloatField(default=0.0, help_text="0 to 1")
    metrics = models.JSONField(default=dict, blank=True, help_text="the latest metrics")
    history = models.JSONField(default=list, blank=True, help_text="metrics over steps, for curves")
    message = models.TextField(blank=True)
    worker = models.CharField(max_length=255, blank=True, help_text="the Celery worker (node name) that took it")
    checkpoint = models.ForeignKey(
        Checkpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="training_jobs"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(progress__gte=0) & Q(progress__lte=1), name="trainingjob_progress_in_range"
            )
        ]
        indexes = [models.Index(fields=["status", "-created_at"], name="trainingjob_status_created")]

    def __str__(self) -> str:
        return f"{self.kind} training {self.pk} ({self.status})"


class EvaluationRun(models.Model):
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    config = models.JSONField(default=dict, blank=True)
    progress = models.FloatField(default=0.0, help_text="0 to 1")
    report = models.JSONField(default=dict, blank=True)
    message = models.TextField(blank=True)
    worker = models.CharField(max_length=255, blank=True, help_text="the Celery worker (node name) that took it")
    checkpoint = models.ForeignKey(
        Checkpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="evaluations"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(progress__gte=0) & Q(progress__lte=1), name="evaluation_progress_in_range"
            )
        ]

    def __str__(self) -> str:
        return f"evaluation {self.pk} ({self.status})"
