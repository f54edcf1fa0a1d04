from __future__ import annotations

import pytest

from studio.services.scheduling import step_request, step_started


def test_a_burst_of_requests_queues_one_step_until_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    queued: list[int] = []
    monkeypatch.setattr("workers.tasks.run_step.delay", queued.append)
    for _ in range(5):
        step_request(424242)
    assert queued == [424242]
    step_started(424242)
    step_request(424242)
    assert queued == [424242, 424242]
    step_started(424242)


def test_an_unreachable_cache_still_queues_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    queued: list[int] = []
    monkeypatch.setattr("workers.tasks.run_step.delay", queued.append)

    def broken(*args: object, **kwargs: object) -> bool:
        raise ConnectionError("redis is down")

    monkeypatch.setattr("studio.services.scheduling.cache.add", broken)
    step_request(7)
    step_request(7)
    assert queued == [7, 7]
