"""Writing a run that was decided and called outside its rows (/v1's fast path,
`studio.services.fast_path`): its task, run, nodes, attempts and events, all or none.

Idempotent: a run already written is left as it is, so a record delivered twice (acks_late,
a worker that died after COMMIT) writes nothing the second time. One exception: a run that the
recovery sweep recorded lost (its web process looked dead, `studio.services.fast_lost`) is
replaced by its own record when that arrives after all. Once written the run is like any
other: a checker verifies its answer, its trace is exported, and a run handed over sends its
events to the run's group and its queued attempts to the workers. Either way the run's held
rows (`studio.fast_intents`) go once the record commits, and readers waiting on them read it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection, models, transaction
from psycopg.errors import ForeignKeyViolation, UniqueViolation

from studio import fast_intents, queues, tracing
from studio.event_schemas import check_events
from studio.models import RUN_ENDED, Attempt, AttemptStatus, Node, Run, RunEvent, Task
from studio.services.events import events_notify

log = logging.getLogger(__name__)


# The error kind of an attempt whose web process died during its call (studio.services.fast_lost).
LOST = "lost"

MODELS: dict[str, type[models.Model]] = {"task": Task, "run": Run, "node": Node, "attempt": Attempt, "event": RunEvent}
LABELS = {model: label for label, model in MODELS.items()}


def payload_dump(rows: Sequence[models.Model], *, dispatch: Sequence[int] = (), verify: bool = False) -> str:
    """A run's rows (task, run, nodes, attempts, events, in that order) as one JSON text, every
    column as it is; with the attempts still to send and whether a checker is due."""
    found = [
        [LABELS[type(row)], {field.attname: field.value_from_object(row) for field in row._meta.concrete_fields}]
        for row in rows
    ]
    return json.dumps({"rows": found, "dispatch": list(dispatch), "verify": verify}, cls=DjangoJSONEncoder)


def _load(label: str, values: dict[str, Any]) -> models.Model:
    model = MODELS[label]
    fields = {field.attname: field for field in model._meta.concrete_fields}
    return model(**{name: fields[name].to_python(value) for name, value in values.items()})


def run_record(*, payload: str) -> bool:
    """Write the run `payload` holds (`payload_dump`); False when it was written before.

    In one transaction of as few statements as it takes (a worker writes one for every fast
    request): the inserts, then COMMIT, where the foreign keys are checked. A run written
    before is its task's primary key taken; an owner deleted since is a foreign key broken.
    Inside a caller's transaction the keys are checked before the savepoint ends instead."""
    found = json.loads(payload)
    objects = [_load(label, values) for label, values in found["rows"]]
    run = next(row for row in objects if isinstance(row, Run))
    events = [row for row in objects if isinstance(row, RunEvent)]
    if settings.ORCHESTRA_CHECK_EVENTS:
        check_events([(event.type, event.payload) for event in events])
    try:
        try:
            _insert(objects, run, events, found)
        except IntegrityError as exc:
            if not (_task_taken(exc) and _replaces_lost(objects)):
                raise
            log.warning("run %s was recorded lost; its own record arrived after all and replaces it", run.pk)
            with transaction.atomic():
                Task.objects.filter(pk=run.task_id).delete()  # its run, nodes, attempts and events with it
                _insert(objects, run, events, found)
    except IntegrityError as exc:
        if _task_taken(exc):
            log.info("run %s is already recorded", run.pk)
            fast_intents.release([run.pk])
            return False
        if not isinstance(exc.__cause__, ForeignKeyViolation):
            raise
        # Its owner, pool or endpoint was deleted between the answer and now: the run would
        # have gone with them (they cascade), so there is nothing left to write it under.
        log.error("run %s cannot be recorded: %s", run.pk, exc)
        fast_intents.release([run.pk])
        return False
    return True


def _insert(objects: list[models.Model], run: Run, events: list[RunEvent], found: dict[str, Any]) -> None:
    with transaction.atomic():
        for model in MODELS.values():  # parents first
            rows = [row for row in objects if type(row) is model]
            if rows:
                # One INSERT of the rows as they were: raw, as a fixture's rows are saved, so
                # that created_at keeps its value (auto_now_add would say "now").
                fields = [
                    field
                    for field in model._meta.local_concrete_fields
                    if not (field.primary_key and rows[0].pk is None)  # events: ids of the table's own
                ]
                model._base_manager._insert(rows, fields=fields, raw=True)  # type: ignore[attr-defined]
        if connection.savepoint_ids:  # nested: COMMIT is the caller's, so check the keys now
            connection.check_constraints()
        _after_commit(run, events, found)


def _task_taken(exc: IntegrityError) -> bool:
    cause = exc.__cause__
    return isinstance(cause, UniqueViolation) and cause.diag.constraint_name == f"{Task._meta.db_table}_pkey"


def _replaces_lost(objects: list[models.Model]) -> bool:
    """Whether this record is a run's own, finished, and the run stands recorded lost."""
    first = next((row for row in objects if isinstance(row, Attempt)), None)
    if first is None or first.status in {AttemptStatus.QUEUED, AttemptStatus.RUNNING}:
        return False  # no call in it, or the held rows themselves: nothing to replace with
    return Attempt.objects.filter(pk=first.pk, error_kind=LOST).exists()


def _after_commit(run: Run, events: list[RunEvent], found: dict[str, Any]) -> None:
    """What follows a run's writing once it commits. Its events go to the run's group only if
    the run goes on: nobody can be watching an ended fast run yet (a watcher joins a run that
    exists, and then reads its events from the database)."""
    if run.status not in RUN_ENDED:
        events_notify(run.pk, events)
    dispatch: list[int] = found.get("dispatch") or []
    if dispatch:
        transaction.on_commit(lambda: queues.send(queues.EXECUTE_ATTEMPTS, dispatch))
    if found.get("verify"):
        transaction.on_commit(lambda: queues.send(queues.VERIFY_RUN, run.pk))
    if run.status in RUN_ENDED and tracing.enabled():
        transaction.on_commit(lambda: tracing.trace_run(run.pk))
    transaction.on_commit(lambda: fast_intents.release([run.pk]))
