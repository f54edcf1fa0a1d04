from __future__ import annotations

from django.db import models
from django.db.models import Q


class ModelPool(models.Model):
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    calibration_source = models.CharField(
        max_length=50,
        blank=True,
        help_text="the RecordedOutcome source whose rows for the pool's models are its probe outcomes",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ModelEndpoint(models.Model):
    """One model reachable through litellm, e.g. `openai/gpt-4o-mini` or `replay/claude-v2`."""

    pool = models.ForeignKey(ModelPool, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=100)
    model = models.CharField(max_length=200, help_text="litellm model string, e.g. openai/gpt-4o-mini")
    api_base = models.CharField("API base", max_length=500, blank=True, help_text="e.g. http://127.0.0.1:8001/v1")
    # Fernet token; see studio.crypto. Never serialized, never displayed.
    api_key_encrypted = models.TextField(blank=True, editable=False)
    input_cost_per_mtok = models.DecimalField(
        "input $/M tokens",
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million input tokens",
    )
    output_cost_per_mtok = models.DecimalField(
        "output $/M tokens",
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million output tokens",
    )
    context_window = models.PositiveIntegerField(null=True, blank=True)
    descriptors = models.JSONField(default=dict, blank=True, help_text="size, family, tags")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "name"], name="endpoint_unique_name_in_pool"),
            models.CheckConstraint(
                condition=Q(input_cost_per_mtok__gte=0) | Q(input_cost_per_mtok__isnull=True),
                name="endpoint_input_cost_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(output_cost_per_mtok__gte=0) | Q(output_cost_per_mtok__isnull=True),
                name="endpoint_output_cost_not_negative",
            ),
        ]
        indexes = [models.Index(fields=["model"], name="endpoint_model")]

    def __str__(self) -> str:
        return f"{self.pool.name}/{self.name}"

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)


class Primitive(models.Model):
    """How a model is called: direct, cot, self_consistency, program, tool_use, ..."""

    name = models.SlugField(max_length=50, unique=True)
    description = models.TextField(blank=True)
    parameters = models.JSONField(default=dict, blank=True, help_text='e.g. {"k": 5}')
    needs_tools = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Admissibility(models.Model):
    """Whether a (model endpoint, primitive) pair may be chosen by the policy."""

    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.CASCADE, related_name="admissibilities")
    primitive = models.ForeignKey(Primitive, on_delete=models.CASCADE, related_name="admissibilities")
    allowed = models.BooleanField(default=True)
    limits = models.JSONField(default=dict, blank=True, help_text='optional, e.g. {"max_tokens": 1024}')

    class Meta:
        verbose_name_plural = "admissibilities"
        constraints = [models.UniqueConstraint(fields=["endpoint", "primitive"], name="admissibility_unique_pair")]

    def __str__(self) -> str:
        mark = "allowed" if self.allowed else "not allowed"
        return f"{self.endpoint} × {self.primitive}: {mark}"
