"""Preference pairs: creating them, labeling them, importing them from JSONL."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from orchestrator.reward.jsonl import PreferenceFormatError, PreferenceRecord, read_preferences
from orchestrator.reward.plans import Plan
from studio.errors import ApplicationError, Conflict, Invalid, NotFound
from studio.models import (
    RUN_ENDED,
    Domain,
    PairSource,
    PreferenceLabel,
    PreferencePair,
    Role,
    Run,
    RunStatus,
    Task,
    User,
    Verdict,
)
from studio.permissions import check_role
from studio.services.tasks import check_task_text
from studio.storable import UnstorableText, check_storable

IMPORTED_POLICY = "imported"
MAX_SECONDS_SPENT = 24 * 3600


class InvalidLines(Invalid):
    """A JSONL body with bad lines: `errors` lists `{line, message}` for every one of them."""

    def __init__(self, errors: list[tuple[int, str]]) -> None:
        super().__init__("body", str(PreferenceFormatError(errors)))
        self.extra["errors"] = [{"line": line, "message": message} for line, message in errors]


def check_source(source: str) -> None:
    if source not in PairSource.values:
        raise Invalid("source", f"Unknown pair source {source!r}; use one of {', '.join(PairSource.values)}.")


def check_pair_runs(run_a: Run, run_b: Run) -> None:
    """Two different, ended runs of the same task."""
    if run_a.pk == run_b.pk:
        raise Invalid("run_b_id", f"A pair needs two different runs; both are run {run_a.pk}.")
    if run_a.task_id != run_b.task_id:
        raise Invalid(
            "run_b_id",
            f"A pair needs two runs of the same task; run {run_a.pk} is of task {run_a.task_id} "
            f"and run {run_b.pk} of task {run_b.task_id}.",
        )
    for field, run in (("run_a_id", run_a), ("run_b_id", run_b)):
        if run.status not in RUN_ENDED:
            raise Invalid(field, f"Run {run.pk} is still {run.status}; only finished runs can be compared.")


@transaction.atomic
def pair_create(
    *,
    user: User,
    run_a_id: int,
    run_b_id: int,
    source: str = PairSource.HUMAN,
    metadata: dict[str, Any] | None = None,
) -> PreferencePair:
    """A pair of two finished runs of one task; the same two runs in either order are a 409."""
    check_role(user, Role.RESEARCHER)
    check_source(source)
    metadata = metadata or {}
    if metadata.get("preferred", "a") not in ("a", "b"):
        raise Invalid("metadata.preferred", 'metadata.preferred must be "a" or "b" when given.')
    # Locking both runs, in id order, serializes concurrent creations of the same pair in either order.
    runs = {run.pk: run for run in Run.objects.select_for_update().filter(pk__in=[run_a_id, run_b_id]).order_by("pk")}
    for run_id in (run_a_id, run_b_id):
        if run_id not in runs:
            raise NotFound(f"Run {run_id} does not exist.")
    run_a, run_b = runs[run_a_id], runs[run_b_id]
    check_pair_runs(run_a, run_b)
    same = Q(run_a=run_a, run_b=run_b) | Q(run_a=run_b, run_b=run_a)
    existing = PreferencePair.objects.filter(same).first()
    if existing is not None:
        raise Conflict(f"Runs {run_a_id} and {run_b_id} are already pair {existing.pk}.", {"pair_id": existing.pk})
    try:
        with transaction.atomic():
            return PreferencePair.objects.create(
                task_id=run_a.task_id, run_a=run_a, run_b=run_b, source=source, metadata=metadata, created_by=user
            )
    except IntegrityError:
        raise Conflict(f"Runs {run_a_id} and {run_b_id} are already a pair.") from None


@transaction.atomic
def pair_label(
    *, pair_id: int, user: User, verdict: str, seconds_spent: float | None = None
) -> tuple[PreferenceLabel, bool]:
    """Record the user's verdict on a pair; the label and whether it is new.

    A labeler has one label per pair: labeling a pair again replaces the verdict and the
    time spent (a change of mind, or a double submit), and keeps the first label's time.
    """
    check_role(user, Role.LABELER)
    if verdict not in Verdict.values:
        raise Invalid("verdict", f"Unknown verdict {verdict!r}; use one of {', '.join(Verdict.values)}.")
    if seconds_spent is not None and not 0 <= seconds_spent <= MAX_SECONDS_SPENT:
        raise Invalid("seconds_spent", f"seconds_spent must be between 0 and {MAX_SECONDS_SPENT}.")
    if not PreferencePair.objects.filter(pk=pair_id).exists():
        raise NotFound(f"Preference pair {pair_id} does not exist.")
    label, created = PreferenceLabel.objects.update_or_create(
        pair_id=pair_id, labeler=user, defaults={"verdict": verdict, "seconds_spent": seconds_spent}
    )
    return label, created


@transaction.atomic
def pair_unlabel(*, pair_id: int, user: User) -> None:
    """Take back the user's verdict on a pair (an undo): the pair is in their queue again."""
    check_role(user, Role.LABELER)
    deleted, _ = PreferenceLabel.objects.filter(pair_id=pair_id, labeler=user).delete()
    if deleted:
        return
    if not PreferencePair.objects.filter(pk=pair_id).exists():
        raise NotFound(f"Preference pair {pair_id} does not exist.")
    raise NotFound(f"You have no verdict on pair {pair_id} to undo.")


def check_import_records(records: list[tuple[int, PreferenceRecord]]) -> None:
    """What JSONL parsing cannot see: known sources, task text the studio accepts."""
    errors: list[tuple[int, str]] = []
    for line, record in records:
        problems = []
        if record.source not in PairSource.values:
            problems.append(f'"source" {record.source!r} is not one of {", ".join(PairSource.values)}')
        try:
            check_task_text(record.prompt)
        except ApplicationError as exc:
            problems.append(f'"prompt": {exc.message}')
        plans = [plan.to_dict() for plan in (record.chosen_plan, record.rejected_plan) if plan is not None]
        try:
            check_storable([record.prompt, record.chosen, record.rejected, record.source, record.extra, plans])
        except UnstorableText as exc:
            problems.append(str(exc))
        if problems:
            errors.append((line, "; ".join(problems)))
    if errors:
        raise InvalidLines(errors)


@transaction.atomic
def preferences_import(*, user: User, text: str) -> dict[str, Any]:
    """Every line of a JSONL file as a task, its two runs and their pair; all or nothing.

    Each record becomes a task owned by `user`, a chosen and a rejected run (policy
    `imported`, succeeded, the plan kept in `policy_config["plan"]`), and a pair with the
    chosen run as A and `metadata.preferred = "a"`. Any bad line: InvalidLines, nothing written.
    """
    check_role(user, Role.RESEARCHER)
    lines = text.split("\n")  # not splitlines(): JSON strings may hold U+2028 and the like
    try:
        records = read_preferences(lines)
    except PreferenceFormatError as exc:
        raise InvalidLines(exc.errors) from None
    numbered = [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]
    check_import_records([(number, record) for (number, _), record in zip(numbered, records, strict=True)])
    if not records:
        raise Invalid("body", "The file holds no preference records.")
    now = timezone.now()
    tasks = Task.objects.bulk_create(_task(user, record) for record in records)
    runs = Run.objects.bulk_create(
        _run(user, task, answer, plan, now)
        for task, record in zip(tasks, records, strict=True)
        for answer, plan in ((record.chosen, record.chosen_plan), (record.rejected, record.rejected_plan))
    )
    PreferencePair.objects.bulk_create(
        PreferencePair(
            task=task,
            run_a=runs[2 * i],
            run_b=runs[2 * i + 1],
            source=record.source,
            metadata={"preferred": "a", "imported": True, **_original_ids(record)},
            created_by=user,
        )
        for i, (task, record) in enumerate(zip(tasks, records, strict=True))
    )
    return {"pairs": len(records), "tasks": len(tasks), "runs": len(runs), "by_source": _by_source(records)}


def _task(user: User, record: PreferenceRecord) -> Task:
    benchmark = record.extra.get("benchmark")
    domain = record.extra.get("domain")
    return Task(
        owner=user,
        text=record.prompt,
        benchmark=benchmark if isinstance(benchmark, str) and len(benchmark) <= 100 else "",
        domain=domain if domain in Domain.values else "",
        metadata={"imported": True},
    )


def _run(user: User, task: Task, answer: str, plan: Plan | None, now: datetime) -> Run:
    return Run(
        task=task,
        owner=user,
        policy=IMPORTED_POLICY,
        policy_config={"plan": plan.to_dict()} if plan is not None else {},
        status=RunStatus.SUCCEEDED,
        end_reason="imported",
        final_answer=answer,
        started_at=now,
        finished_at=now,
    )


def _original_ids(record: PreferenceRecord) -> dict[str, Any]:
    """The exporting studio's ids, kept for lineage."""
    return {f"original_{key}": record.extra[key] for key in ("pair_id", "task_id") if key in record.extra}


def _by_source(records: list[PreferenceRecord]) -> dict[str, int]:
    return dict(sorted(Counter(record.source for record in records).items()))
