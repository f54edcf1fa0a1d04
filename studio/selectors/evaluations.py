"""Reading evaluations."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from studio.errors import NotFound
from studio.models import EvaluationRun
from studio.services.evaluations import (
    COMPOSITE_PRESETS,
    DEFAULT_COMPOSITE_OUTCOMES,
    DEFAULT_OUTCOMES,
    PRESETS,
    method_names,
)
from studio.services.training import shipped_outcomes


def evaluation_list() -> QuerySet[EvaluationRun]:
    """Newest first, without the reports (a list shows status and config only)."""
    return EvaluationRun.objects.defer("report")


def evaluation_get(*, evaluation_id: int) -> EvaluationRun:
    run = EvaluationRun.objects.filter(pk=evaluation_id).first()
    if run is None:
        raise NotFound(f"There is no evaluation with id {evaluation_id}.")
    return run


def evaluation_options() -> dict[str, Any]:
    """What a new evaluation may use: the presets, the shipped outcome files, the methods."""
    return {
        "presets": PRESETS,
        "outcomes": [path.name for path in shipped_outcomes()],
        "default_outcomes": list(DEFAULT_OUTCOMES),
        "methods": list(method_names()),
        "composites": {
            "presets": COMPOSITE_PRESETS,
            "default_outcomes": list(DEFAULT_COMPOSITE_OUTCOMES),
            "methods": list(method_names("composites")),
        },
    }
