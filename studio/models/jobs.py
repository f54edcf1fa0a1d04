"""What every background job shares (training, evaluation, collection): a row that is queued,
taken by a worker, reports its progress and ends. Its lifecycle is studio.services.jobs."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models
from django.db.models import Q


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    STOPPED = "stopped"  # a collection whose budget ran out first; the rest wait for a larger budget
    FAILED = "failed"
    CANCELLED = "cancelled"


JOB_ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)  # a job in these has not ended yet


class Job(models.Model):
    """A background job. `watch_group` names the channel group (`<watch_group>.<id>`) its page
    watches live; a kind without one is read by polling."""

    watch_group: ClassVar[str] = ""

    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = models.FloatField(default=0.0, help_text="0 to 1")
    message = models.TextField(blank=True, help_text="what it is doing, or why it ended as it did")
    worker = models.CharField(max_length=255, blank=True, help_text="the Celery worker (node name) that took it")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(progress__gte=0) & Q(progress__lte=1), name="%(class)s_progress_in_range"
            )
        ]

    def progress_message(self) -> dict[str, Any]:
        """The job as it stands, as its watchers receive it (event_schemas' *Progress, without `kind`)."""
        return {"id": self.pk, "status": self.status, "progress": self.progress, "message": self.message}
