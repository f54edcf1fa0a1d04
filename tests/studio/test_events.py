from __future__ import annotations

import threading

import pytest
from django.db import connection

from studio.models import RunEvent
from studio.services.events import run_event_append
from tests.factories import RunFactory


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_get_gapless_sequence_numbers() -> None:
    run = RunFactory()
    errors: list[BaseException] = []

    def append_many(worker: int) -> None:
        try:
            for n in range(20):
                run_event_append(run_id=run.pk, type="node.noted", payload={"key": f"w{worker}", "n": n})
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=append_many, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, 81))
    run.refresh_from_db()
    assert run.last_seq == 80
