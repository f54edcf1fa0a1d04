"""A finished run's answer checked by its benchmark's checker, in a worker (`workers.verify_run`).

The engine ends a run at once and marks its verification pending when its task has a gold
answer and a checker (`engine.verify`); the checker may run code in the sandbox, so it runs
in a worker, not under the run's row lock. Recording is idempotent: a second delivery finds
nothing pending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from studio.models import Run, RunStatus
from studio.services.events import run_event_append

# What a checker may read besides the answer and the gold (e.g. a code task's entry point).
ITEM_KEYS = ("entry_point", "timeout_s", "tests")


@dataclass(frozen=True)
class VerificationWork:
    run_id: int
    checker: str
    answer: str
    gold: str
    item: dict[str, Any]


def run_verification_work(*, run_id: int) -> VerificationWork | None:
    """What checking the run needs, or None when it has nothing pending."""
    run = Run.objects.select_related("task").filter(pk=run_id, status=RunStatus.SUCCEEDED).first()
    if run is None or not run.verification.get("pending"):
        return None
    task = run.task
    item = {key: task.metadata[key] for key in ITEM_KEYS if key in task.metadata}
    return VerificationWork(
        run_id=run.pk,
        checker=str(run.verification.get("checker") or task.checker or task.benchmark),
        answer=run.final_answer,
        gold=task.gold_answer,
        item={"prompt": task.text, **item},
    )


@transaction.atomic
def run_verified(*, run_id: int, score: float, correct: bool, detail: str) -> bool:
    """Record the checker's verdict on a run whose verification is pending; False when none is."""
    run = Run.objects.select_for_update().filter(pk=run_id).first()
    if run is None or not run.verification.get("pending"):
        return False
    verification = {key: value for key, value in run.verification.items() if key != "pending"}
    verification.update(score=score, correct=correct, detail=detail[:2000])
    run.verification = verification
    run.save(update_fields=["verification"])
    run_event_append(run_id=run.pk, type="run.verified", payload={"verification": verification})
    return True
