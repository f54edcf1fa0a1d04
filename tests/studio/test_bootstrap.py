"""The demo policy: bootstrap queues its training once, and recovers from an interrupted one."""

from __future__ import annotations

import pytest

from studio.models import Checkpoint, JobStatus, Role, TrainingJob
from studio.services.bootstrap import demo_policy_ensure
from studio.services.policies import default_policy

pytestmark = pytest.mark.django_db


def test_the_demo_policy_is_queued_once_and_again_after_an_interruption(make_user) -> None:
    admin = make_user(Role.ADMIN)
    job = demo_policy_ensure(user=admin)
    assert job is not None and job.config["outcomes"] == ["routerbench.jsonl.gz"]
    assert demo_policy_ensure(user=admin) is None  # already queued
    TrainingJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)  # the studio stopped mid-training
    again = demo_policy_ensure(user=admin)
    job.refresh_from_db()
    assert (job.status, job.message) == (JobStatus.FAILED, "interrupted: the studio stopped while it ran")
    assert again is not None and again.pk != job.pk


def test_runs_default_to_the_learned_policy_once_a_checkpoint_is_the_default(make_user) -> None:
    assert default_policy() == "default"
    Checkpoint.objects.create(kind="policy", name="demo", path="checkpoints/demo.pt", is_default=True)
    assert default_policy() == "learned"
    assert demo_policy_ensure(user=make_user(Role.ADMIN)) is None  # a checkpoint exists: nothing to train
