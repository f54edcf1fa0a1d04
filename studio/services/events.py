"""The per-run event log: append under the run's row lock, notify after commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from studio.event_schemas import check_events
from studio.models import Run, RunEvent
from studio.notifier import notifier


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def event_message(event: RunEvent) -> dict[str, Any]:
    """The JSON a WebSocket client receives for one event."""
    return {
        "seq": event.seq,
        "type": event.type,
        "payload": event.payload,
        "created_at": event.created_at.isoformat(),
    }


def events_notify(run_id: int, events: Sequence[RunEvent]) -> None:
    """Send written events to the run's group once the transaction commits (see run_events_append)."""
    messages = [event_message(event) for event in events]
    transaction.on_commit(lambda: _notify(run_id, messages), robust=True)


def _notify(run_id: int, messages: list[dict[str, Any]]) -> None:
    """One channel-layer message for the events of one transaction, in order (a `group_send`
    costs two Redis round trips even when nobody listens)."""
    if messages:
        notifier.notify(run_group(run_id), {"type": "run.events", "events": messages})


def _reserve(run_id: int, count: int) -> int:
    """Bump the run's `last_seq` by `count` and return the first reserved number. The
    UPDATE holds the run's row lock until commit, so no other writer can take these."""
    table = Run._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET last_seq = last_seq + %s WHERE id = %s RETURNING last_seq",  # noqa: S608 - a model's table name
            [count, run_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise Run.DoesNotExist(f"run {run_id} does not exist")
    return int(row[0]) - count + 1


@transaction.atomic
def run_events_append(*, run_id: int, events: Sequence[tuple[str, dict[str, Any]]]) -> list[RunEvent]:
    """Append events to a run, in order, with consecutive sequence numbers (two statements
    whatever their number). They are sent to the run's group only once committed."""
    if not events:
        return []
    if settings.ORCHESTRA_CHECK_EVENTS:
        check_events(events)
    first = _reserve(run_id, len(events))
    rows = RunEvent.objects.bulk_create(
        RunEvent(run_id=run_id, seq=first + n, type=type, payload=payload) for n, (type, payload) in enumerate(events)
    )
    # robust (events_notify): Postgres holds the events; a client that missed a notification replays it.
    events_notify(run_id, rows)
    return rows


def run_event_append(*, run_id: int, type: str, payload: dict[str, Any]) -> RunEvent:
    """Append one event to a run (see run_events_append)."""
    return run_events_append(run_id=run_id, events=[(type, payload)])[0]
