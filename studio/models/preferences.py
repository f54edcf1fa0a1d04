from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from studio.models.runs import Run, Task


class PairSource(models.TextChoices):
    HUMAN = "human"
    CORRECT_OVER_INCORRECT = "correct_over_incorrect"
    CHEAPER_CORRECT = "cheaper_correct"
    SPECIALIZED_OVER_BASE = "specialized_over_base"
    NODE_LEVEL = "node_level"


class PreferencePair(models.Model):
    """Two runs of the same task, to be compared (by people, or by construction)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="preference_pairs")
    run_a = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    run_b = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=40, choices=PairSource.choices, default=PairSource.HUMAN)
    metadata = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(run_a=F("run_b")), name="pair_runs_differ"),
            models.UniqueConstraint(fields=["run_a", "run_b"], name="pair_unique_runs"),
        ]
        indexes = [
            models.Index(fields=["task"], name="pair_task"),
            models.Index(fields=["source"], name="pair_source"),
        ]

    def __str__(self) -> str:
        return f"pair {self.pk}: run {self.run_a_id} vs run {self.run_b_id}"


class Verdict(models.TextChoices):
    A = "a", "A is better"
    B = "b", "B is better"
    TIE = "tie", "Tie"
    SKIP = "skip", "Skip"


class PreferenceLabel(models.Model):
    """One labeler's verdict on a pair; each labeler labels a pair at most once."""

    pair = models.ForeignKey(PreferencePair, on_delete=models.CASCADE, related_name="labels")
    labeler = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="labels")
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    seconds_spent = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pair_id", "created_at"]
        constraints = [models.UniqueConstraint(fields=["pair", "labeler"], name="label_once_per_labeler")]
        indexes = [models.Index(fields=["labeler", "-created_at"], name="label_labeler_created")]

    def __str__(self) -> str:
        return f"{self.labeler_id} on pair {self.pair_id}: {self.verdict}"
