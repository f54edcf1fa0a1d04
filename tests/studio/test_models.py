from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from studio.models import Checkpoint, PreferencePair, RecordedOutcome, RunEvent
from tests.factories import AdmissibilityFactory, RunEventFactory, RunFactory

pytestmark = pytest.mark.django_db


def _violates(create) -> bool:
    try:
        with transaction.atomic():
            create()
    except IntegrityError:
        return True
    return False


def test_admissibility_is_unique_per_pair() -> None:
    row = AdmissibilityFactory()
    assert _violates(lambda: AdmissibilityFactory(endpoint=row.endpoint, primitive=row.primitive))


def test_run_event_sequence_is_unique_per_run() -> None:
    event = RunEventFactory(seq=1)
    assert _violates(lambda: RunEvent.objects.create(run=event.run, seq=1, type="x"))
    RunEvent.objects.create(run=RunFactory(), seq=1, type="x")  # another run may reuse it


def test_a_pair_compares_two_different_runs() -> None:
    run = RunFactory()
    assert _violates(lambda: PreferencePair.objects.create(task=run.task, run_a=run, run_b=run))


def test_one_default_checkpoint_per_kind() -> None:
    Checkpoint.objects.create(kind="policy", name="a", path="a.pt", is_default=True)
    Checkpoint.objects.create(kind="reward_model", name="a", path="rm.pt", is_default=True)
    assert _violates(lambda: Checkpoint.objects.create(kind="policy", name="b", path="b.pt", is_default=True))


def test_recorded_score_stays_in_range() -> None:
    fields = dict(
        source="s", item_id="i", benchmark="b", domain="math", prompt="p", prompt_sha256="0" * 64,
        model="m", primitive="direct",
    )  # fmt: skip
    assert _violates(lambda: RecordedOutcome.objects.create(score=1.5, **fields))
    RecordedOutcome.objects.create(score=1.0, **fields)
    assert _violates(lambda: RecordedOutcome.objects.create(score=0.0, **fields))
