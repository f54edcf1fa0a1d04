from __future__ import annotations

import pytest

from studio import queues
from studio.services.scheduling import step_request, step_started


def sent_to(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The runs whose step `studio.queues.send` is asked to send, in order."""
    queued: list[int] = []

    def send(name: str, *args: object, countdown: float | None = None) -> bool:
        assert name == queues.RUN_STEP
        queued.append(int(args[0]))  # type: ignore[call-overload]
        return True

    monkeypatch.setattr(queues, "send", send)
    return queued


def test_a_burst_of_requests_queues_one_step_until_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    queued = sent_to(monkeypatch)
    for _ in range(5):
        step_request(424242)
    assert queued == [424242]
    step_started(424242)
    step_request(424242)
    assert queued == [424242, 424242]
    step_started(424242)


def test_a_forced_request_passes_a_mark_that_outlived_its_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step ran while the cache was away, so its mark was never cleared (and a restarted Redis
    keeps it): plain requests are held back by it, the recovery sweep's forced one is not, and
    it leaves a fresh mark that later requests coalesce into."""
    queued = sent_to(monkeypatch)
    step_request(515151)
    assert queued == [515151]  # the step this mark stood for ran, and could not clear it
    step_request(515151)
    assert queued == [515151]
    step_request(515151, force=True)
    assert queued == [515151, 515151]
    step_request(515151)
    assert queued == [515151, 515151]
    step_started(515151)


def test_an_unreachable_cache_still_queues_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    queued = sent_to(monkeypatch)

    def broken(*args: object, **kwargs: object) -> bool:
        raise ConnectionError("redis is down")

    monkeypatch.setattr("studio.services.scheduling.cache.add", broken)
    step_request(7)
    step_request(7)
    assert queued == [7, 7]


@pytest.mark.django_db
def test_the_recovery_sweep_steps_only_runs_that_went_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from studio.models import Run
    from studio.services.events import run_event_append
    from studio.services.scheduling import runs_recover
    from tests.factories import RunFactory

    stepped: list[tuple[int, bool]] = []

    def step_request(run_id: int, *, force: bool = False) -> None:
        stepped.append((run_id, force))

    monkeypatch.setattr("studio.services.scheduling.step_request", step_request)
    long_ago = timezone.now() - timedelta(minutes=5)
    quiet = RunFactory(status="running")
    busy = RunFactory(status="running")
    ended = RunFactory(status="succeeded")
    fresh = RunFactory(status="pending")
    Run.objects.filter(pk__in=[quiet.pk, busy.pk, ended.pk]).update(created_at=long_ago)
    run_event_append(run_id=busy.pk, type="node.noted", payload={"key": "root"})  # an event just now: not quiet

    assert runs_recover(quiet_s=60) == [quiet.pk]
    assert stepped == [(quiet.pk, True)]  # forced: past a mark its step could not clear
    assert fresh.pk not in runs_recover(quiet_s=60)
