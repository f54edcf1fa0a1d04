"""The WebSocket messages' schemas (studio/event_schemas.py): the browser's copy is the live
one, and run events are checked against them as they are written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from studio.event_schemas import PAYLOADS, EventSchemaError, check_events, event_schema
from studio.models import RunEvent
from studio.services.events import run_event_append
from tests.factories import RunFactory

COPY = Path(settings.BASE_DIR) / "frontend" / "src" / "api" / "messages.json"

NODE = {"key": "root", "kind": "root", "text": "What is 6*7?", "depth": 0, "parent": None, "depends_on": [],
        "status": "ready", "item_id": None}  # fmt: skip


def test_the_front_ends_copy_is_the_live_schema() -> None:
    assert json.loads(COPY.read_text()) == event_schema(), "an event schema changed: run `make api-types`"


def test_every_event_type_is_in_the_union_the_browser_gets() -> None:
    union = event_schema()["components"]["schemas"]["RunEventMessage"]
    assert sorted(union["discriminator"]["mapping"]) == sorted(PAYLOADS)
    assert {f"node.{status}" for status in ("pending", "ready", "running", "succeeded", "failed", "skipped",
                                            "cancelled")} <= set(PAYLOADS)  # fmt: skip
    assert "run.verified" in PAYLOADS


@pytest.mark.parametrize(
    "event",
    [
        ("run.created", {"task": 1, "policy": "default"}),
        ("run.finished", {"status": "cancelled", "reason": "cancelled by ada", "cancelled_attempts": 2}),
        ("run.verified", {"verification": {"correct": True}}),
        ("node.created", NODE),
        ("node.succeeded", {"key": "root", "answer": "42", "attempt": 1}),
        ("node.noted", {"key": "root", "anything": "a policy notes"}),
        (
            "attempt.queued",
            {"key": "root", "attempt": 9, "number": 1, "endpoint": 3, "primitive": "cot", "repair": False},
        ),  # fmt: skip
    ],
)
def test_well_formed_payloads_pass(event: tuple[str, dict[str, Any]]) -> None:
    check_events([event])


@pytest.mark.parametrize(
    "event, words",
    [
        (("node.tick", {}), "Unknown run event type 'node.tick'"),
        (("node.created", {**NODE, "depth": "0"}), "depth"),  # strict: no string for an int
        (("node.created", {k: v for k, v in NODE.items() if k != "kind"}), "kind"),
        (("run.started", {"policy": "default", "pool": 1, "extra": 1}), "extra"),
        (("attempt.finished", {"attempt": 1, "node": "root"}), "tokens_in"),
    ],
)
def test_a_drifting_payload_is_named(event: tuple[str, dict[str, Any]], words: str) -> None:
    with pytest.raises(EventSchemaError, match=words):
        check_events([event])


@pytest.mark.django_db
def test_a_bad_event_is_not_written_while_checks_are_on(settings: Any) -> None:
    run = RunFactory()
    settings.ORCHESTRA_CHECK_EVENTS = True
    with pytest.raises(EventSchemaError):
        run_event_append(run_id=run.pk, type="node.created", payload={"key": "root"})
    assert not RunEvent.objects.filter(run=run).exists()
    settings.ORCHESTRA_CHECK_EVENTS = False  # as in production: written as given
    run_event_append(run_id=run.pk, type="node.created", payload={"key": "root"})
    assert RunEvent.objects.filter(run=run).count() == 1


def test_the_browsers_finished_statuses_are_the_cores() -> None:
    """The browser keeps one copy of the finished run statuses (`lib/eventTree.ts`); it must be
    the core's `RUN_ENDED`."""
    import re

    from orchestrator.core.state import RUN_ENDED

    source = (Path(settings.BASE_DIR) / "frontend" / "src" / "lib" / "eventTree.ts").read_text()
    found = re.search(r"export const RUN_ENDED = \[([^\]]*)\]", source)
    assert found is not None, "lib/eventTree.ts no longer exports RUN_ENDED"
    assert set(re.findall(r'"(\w+)"', found.group(1))) == RUN_ENDED
