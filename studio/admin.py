"""Django admin for pools, endpoints, primitives and admissibility (and a view of the rest).

Provider keys are write-only here: the form takes a new key, encrypts it, and never
renders the stored one back. Endpoints are written through the pool services
(`studio.services.pools`), with the API's checks; a pool's page lists its endpoints and links
to them, it does not edit them.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from studio.errors import ApplicationError
from studio.models import (
    Admissibility,
    ApiToken,
    Checkpoint,
    EvaluationRun,
    ModelEndpoint,
    ModelPool,
    Primitive,
    Run,
    Task,
    TrainingJob,
    User,
)
from studio.services.pools import (
    ENDPOINT_FIELDS,
    check_api_base,
    check_model_string,
    endpoint_create,
    endpoint_update,
)


class EndpointForm(forms.ModelForm):
    api_key = forms.CharField(
        label="API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only. Leave empty to keep the stored key; it is never shown again.",
    )
    clear_api_key = forms.BooleanField(label="Clear API key", required=False, help_text="Remove the stored key.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stored = self.instance.pk is not None and self.instance.has_api_key
        state = "A key is stored." if stored else "No key is stored."
        self.fields["api_key"].help_text = f"{state} Write-only: leave empty to keep it; it is never shown."
        if self.instance.pk is not None:
            self.fields["pool"].disabled = True  # an endpoint stays in its pool (its runs name it)

    def clean_model(self) -> str:
        return _checked(check_model_string, self.cleaned_data["model"])

    def clean_api_base(self) -> str:
        return _checked(check_api_base, self.cleaned_data["api_base"])

    class Meta:
        model = ModelEndpoint
        fields = [
            "pool",
            "name",
            "model",
            "api_base",
            "input_cost_per_mtok",
            "output_cost_per_mtok",
            "context_window",
            "descriptors",
            "enabled",
        ]


def _checked(check: Any, value: str) -> str:
    """`value` if the service's `check` takes it; else the check's sentence as the field's error."""
    try:
        check(value)
    except ApplicationError as error:
        raise forms.ValidationError(error.message) from None
    return value


class AdmissibilityInline(admin.TabularInline):
    model = Admissibility
    extra = 0
    autocomplete_fields = ["primitive"]


class EndpointInline(admin.TabularInline):
    """The pool's endpoints, read only: each is added and edited on its own page (the services' checks)."""

    model = ModelEndpoint
    extra = 0
    fields = ("name", "model", "enabled", "input_cost_per_mtok", "output_cost_per_mtok")
    readonly_fields = fields
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ModelPool)
class ModelPoolAdmin(admin.ModelAdmin):
    list_display = ["name", "endpoint_count", "updated_at"]
    search_fields = ["name", "description"]
    inlines = [EndpointInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ModelPool]:
        return super().get_queryset(request).annotate(endpoint_total=Count("endpoints"))

    @admin.display(description="endpoints", ordering="endpoint_total")
    def endpoint_count(self, pool: Any) -> int:
        return int(pool.endpoint_total)


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    form = EndpointForm
    list_display = [
        "name",
        "pool",
        "model",
        "enabled",
        "key_stored",
        "input_cost_per_mtok",
        "output_cost_per_mtok",
    ]
    list_filter = ["pool", "enabled"]
    list_select_related = ["pool"]
    search_fields = ["name", "model", "pool__name"]
    inlines = [AdmissibilityInline]

    @admin.display(boolean=True, description="key")
    def key_stored(self, endpoint: ModelEndpoint) -> bool:
        return endpoint.has_api_key

    @method_decorator(sensitive_post_parameters("api_key"))
    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        return super().changeform_view(request, object_id, form_url, extra_context)

    def save_model(self, request: HttpRequest, obj: ModelEndpoint, form: forms.Form, change: bool) -> None:
        """Through endpoint_create / endpoint_update, as the API writes; the form checked their rules."""
        data = form.cleaned_data
        fields = {name: data[name] for name in ENDPOINT_FIELDS if name in data}
        api_key = data.get("api_key") or None
        if change:
            saved = endpoint_update(
                endpoint_id=obj.pk, changes=fields, api_key=api_key, clear_api_key=bool(data.get("clear_api_key"))
            )
        else:
            saved = endpoint_create(pool_id=data["pool"].pk, api_key=api_key, **fields)
        obj.pk, obj.api_key_encrypted = saved.pk, saved.api_key_encrypted


@admin.register(Primitive)
class PrimitiveAdmin(admin.ModelAdmin):
    list_display = ["name", "needs_tools", "parameters"]
    list_filter = ["needs_tools"]
    search_fields = ["name", "description"]


@admin.register(Admissibility)
class AdmissibilityAdmin(admin.ModelAdmin):
    list_display = ["endpoint", "primitive", "allowed", "limits"]
    list_editable = ["allowed"]
    list_filter = ["allowed", "primitive", "endpoint__pool"]
    list_select_related = ["endpoint__pool", "primitive"]
    search_fields = ["endpoint__name", "endpoint__model", "primitive__name"]
    autocomplete_fields = ["endpoint", "primitive"]


@admin.register(User)
class StudioUserAdmin(UserAdmin):
    list_display = ["username", "email", "role", "is_active", "is_staff"]
    list_filter = ["role", "is_active", "is_staff"]
    fieldsets = (*(UserAdmin.fieldsets or ()), ("Orchestra Studio", {"fields": ["role"]}))


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    fields = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["user", "name", "prefix", "created_at", "last_used_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tokens are made through the API, where their value is shown once


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["id", "short_text", "owner", "benchmark", "domain", "created_at"]
    list_filter = ["domain", "decomposable"]
    list_select_related = ["owner"]
    search_fields = ["text", "benchmark"]

    @admin.display(description="text")
    def short_text(self, task: Task) -> str:
        return task.text[:80]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "owner", "policy", "status", "cost_usd", "created_at"]
    list_filter = ["status", "policy"]
    list_select_related = ["task", "owner"]
    search_fields = ["task__text"]
    raw_id_fields = ["task", "checkpoint"]


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "is_default", "created_at"]
    list_filter = ["kind", "is_default"]
    search_fields = ["name"]


@admin.register(TrainingJob)
class TrainingJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "progress", "created_at"]
    list_filter = ["kind", "status"]


@admin.register(EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin):
    list_display = ["id", "status", "progress", "created_at"]
    list_filter = ["status"]
