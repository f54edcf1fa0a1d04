from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from orchestrator.core.state import RUN_ENDED
from studio.models.pools import ModelEndpoint, ModelPool, Primitive


def money(**options: Any) -> models.DecimalField:
    """A USD amount, to 1e-8 (a single token of a cheap model costs about 1e-7)."""
    return models.DecimalField(max_digits=16, decimal_places=8, **options)


class Domain(models.TextChoices):
    MATH = "math"
    CODE = "code"
    KNOWLEDGE = "knowledge"
    REASONING = "reasoning"
    MULTI_HOP = "multi_hop"
    LONG_CONTEXT = "long_context"
    TOOL_USE = "tool_use"
    CHAT = "chat"


class Task(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="tasks")
    text = models.TextField()
    gold_answer = models.TextField(blank=True)
    checker = models.CharField(max_length=50, blank=True, help_text="how an answer is verified")
    benchmark = models.CharField(max_length=100, blank=True)
    domain = models.CharField(max_length=20, choices=Domain.choices, blank=True)
    decomposable = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="task_owner_created"),
            models.Index(fields=["benchmark"], name="task_benchmark"),
        ]

    def __str__(self) -> str:
        return self.text[:60]


class RunStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


# The statuses of a run that has ended: the orchestration core's (`orchestrator.core.state`),
# checked against RunStatus below; the browser's copy is generated from the API schema.
assert set(RunStatus.values) >= RUN_ENDED, RUN_ENDED


class Run(models.Model):
    """One orchestration episode of a task under a policy."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="runs")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="runs")
    pool = models.ForeignKey(ModelPool, on_delete=models.PROTECT, null=True, blank=True, related_name="runs")
    policy = models.CharField(max_length=100, default="default")
    policy_config = models.JSONField(default=dict, blank=True)
    checkpoint = models.ForeignKey(
        "studio.Checkpoint", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.PENDING)
    end_reason = models.CharField(max_length=300, blank=True)
    cost_preference = models.FloatField(null=True, blank=True, help_text="λ: weight of cost against accuracy")
    best_of = models.PositiveSmallIntegerField(default=1)
    # Budget; null means unlimited.
    max_cost_usd = money(null=True, blank=True)
    max_nodes = models.PositiveIntegerField(null=True, blank=True)
    max_depth = models.PositiveSmallIntegerField(null=True, blank=True)
    deadline_s = models.PositiveIntegerField(null=True, blank=True)
    # Totals over every attempt of the run.
    tokens_in = models.BigIntegerField(default=0)
    tokens_out = models.BigIntegerField(default=0)
    cost_usd = money(default=0)
    latency_s = models.FloatField(default=0)
    final_answer = models.TextField(blank=True)
    verification = models.JSONField(default=dict, blank=True)
    # The sequence number of the newest RunEvent; bumped under the row lock.
    last_seq = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(best_of__gte=1), name="run_best_of_positive"),
            models.CheckConstraint(
                condition=Q(max_cost_usd__gte=0) | Q(max_cost_usd__isnull=True),
                name="run_max_cost_not_negative",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "-created_at"], name="run_status_created"),
            models.Index(fields=["owner", "-created_at"], name="run_owner_created"),
            models.Index(fields=["task", "-created_at"], name="run_task_created"),
            models.Index(fields=["policy"], name="run_policy"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"


class NodeKind(models.TextChoices):
    ROOT = "root"
    SUBTASK = "subtask"
    AGGREGATE = "aggregate"


class NodeStatus(models.TextChoices):
    PENDING = "pending"
    READY = "ready"
    RUNNING = "running"
    ANSWERED = "answered"  # an answer awaits the policy's review: accepted, or a second opinion asked
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


class Node(models.Model):
    """A subtask in a run's decomposition DAG."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="nodes")
    parent = models.ForeignKey("self", on_delete=models.CASCADE, null=True, blank=True, related_name="children")
    depends_on = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="dependents")
    key = models.CharField(max_length=64, help_text="the node's id within its run, e.g. the planner's id")
    kind = models.CharField(max_length=20, choices=NodeKind.choices, default=NodeKind.SUBTASK)
    text = models.TextField()
    depth = models.PositiveSmallIntegerField(default=0)
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    primitive = models.ForeignKey(Primitive, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    status = models.CharField(max_length=20, choices=NodeStatus.choices, default=NodeStatus.PENDING)
    output = models.TextField(blank=True)
    answer = models.TextField(blank=True)
    verification = models.JSONField(default=dict, blank=True)
    plan = models.JSONField(null=True, blank=True, help_text="the planner's subtasks, once it has answered")
    metadata = models.JSONField(default=dict, blank=True, help_text="e.g. the recorded item a subtask stands for")
    tokens_in = models.BigIntegerField(default=0)
    tokens_out = models.BigIntegerField(default=0)
    cost_usd = money(default=0)
    latency_s = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run_id", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="node_unique_key_in_run")]
        indexes = [models.Index(fields=["run", "status"], name="node_run_status")]

    def __str__(self) -> str:
        return f"node {self.key} of run {self.run_id}"


class AttemptStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


class Attempt(models.Model):
    """One call of a (model, primitive) pair on a node; a node may be retried."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="+")
    primitive = models.ForeignKey(Primitive, on_delete=models.PROTECT, related_name="+")
    idempotency_key = models.CharField(max_length=100, unique=True)
    status = models.CharField(max_length=20, choices=AttemptStatus.choices, default=AttemptStatus.QUEUED)
    request = models.JSONField(default=dict, blank=True)
    envelope = models.JSONField(default=dict, blank=True, help_text="the primitive's normalized result")
    tokens_in = models.BigIntegerField(default=0)
    tokens_out = models.BigIntegerField(default=0)
    cost_usd = money(default=0)
    latency_s = models.FloatField(default=0)
    error_kind = models.CharField(max_length=50, blank=True)
    error_message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["node_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["node", "number"], name="attempt_unique_number_in_node"),
            models.CheckConstraint(condition=Q(number__gte=1), name="attempt_number_positive"),
        ]
        indexes = [models.Index(fields=["status"], name="attempt_status")]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.node}"


class RunEvent(models.Model):
    """Append-only, per-run ordered log; the browser is fed from it and can replay it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=50)
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="runevent_unique_seq_in_run"),
            models.CheckConstraint(condition=Q(seq__gte=1), name="runevent_seq_positive"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} #{self.seq} {self.type}"
