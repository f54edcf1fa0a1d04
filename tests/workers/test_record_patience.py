"""Finished calls wait for a restarting database instead of being made again."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from orchestrator.core.envelope import Envelope
from workers import execution


def test_recording_waits_for_the_database_then_records(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []

    def flaky_finish(*, results: Any) -> list[int]:
        calls.append(results)
        if len(calls) < 3:
            raise OperationalError("the database system is starting up")
        return [attempt for attempt, _ in results]

    monkeypatch.setattr(execution, "attempts_finish", flaky_finish)
    monkeypatch.setattr(execution.time, "sleep", lambda seconds: None)
    results = [(7, Envelope.failure("timeout", "slow"))]
    assert execution._record(results) == [7]
    assert len(calls) == 3 and all(call == results for call in calls)


def test_recording_gives_up_after_its_patience(monkeypatch: pytest.MonkeyPatch) -> None:
    def down(*, results: Any) -> list[int]:
        raise OperationalError("connection refused")

    clock = iter(range(0, 1000, 5))
    monkeypatch.setattr(execution, "attempts_finish", down)
    monkeypatch.setattr(execution.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(execution.time, "monotonic", lambda: float(next(clock)))
    with pytest.raises(OperationalError):
        execution._record([(7, Envelope.failure("timeout", "slow"))])
