"""An evaluation's progress as a message: written to its row by studio.services.evaluations,
and sent, once committed, to the channel group `evaluation.<id>` for a page that watches it
live (/ws/evaluations/<id>/, studio.consumers)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from studio.models import EvaluationRun
from studio.notifier import notifier


def evaluation_group(evaluation_id: int) -> str:
    return f"evaluation.{evaluation_id}"


def evaluation_message(run: EvaluationRun) -> dict[str, Any]:
    """The evaluation as it stands (event_schemas.EvaluationProgress, without `kind`)."""
    return {"id": run.pk, "status": run.status, "progress": run.progress, "message": run.message}


def evaluation_notify(run: EvaluationRun) -> None:
    """Send the evaluation as it stands to its watchers once the transaction commits."""
    message = evaluation_message(run)
    group = evaluation_group(run.pk)
    transaction.on_commit(lambda: notifier.notify(group, {"type": "evaluation.progress", **message}))
