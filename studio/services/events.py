"""The per-run event log: append under the run's row lock, notify after commit."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F

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


def _notify(run_id: int, message: dict[str, Any]) -> None:
    notifier.notify(run_group(run_id), {"type": "run.event", "event": message})


@transaction.atomic
def run_event_append(*, run_id: int, type: str, payload: dict[str, Any]) -> RunEvent:
    """Append the next event of a run. Sequence numbers have no gaps: `last_seq` is
    bumped under the run's row lock, and the event is sent only once committed."""
    Run.objects.filter(pk=run_id).update(last_seq=F("last_seq") + 1)
    # The UPDATE holds the row lock until commit, so no other writer can take this seq.
    seq = Run.objects.values_list("last_seq", flat=True).get(pk=run_id)
    event = RunEvent.objects.create(run_id=run_id, seq=seq, type=type, payload=payload)
    message = event_message(event)
    # robust: Postgres holds the event; a client that missed the notification replays it.
    transaction.on_commit(lambda: _notify(run_id, message), robust=True)
    return event
