"""The demo policy: bootstrap queues its training once, recovers from an interrupted one, and
trains it again when it was trained on older text embeddings."""

from __future__ import annotations

import pytest
import torch

from orchestrator.embedding import EMBEDDING_ID, LEGACY_EMBEDDING
from studio.errors import Invalid
from studio.models import Checkpoint, JobStatus, Role, TrainingJob
from studio.services.bootstrap import DEMO_POLICY_CONFIG, checkpoint_facts, demo_policy_ensure, stale_demo_policy
from studio.services.policies import default_policy
from studio.services.training import training_job_create, training_job_finish

pytestmark = pytest.mark.django_db


def test_the_demo_policy_is_queued_once_and_again_after_an_interruption(make_user) -> None:
    admin = make_user(Role.ADMIN)
    job = demo_policy_ensure(user=admin)
    assert job is not None and job.config["outcomes"] == ["routerbench.jsonl.gz", "smollm2.jsonl.gz"]
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


def demo_checkpoint(name: str, *, embedding: str | None, default: bool = True) -> Checkpoint:
    """A policy checkpoint made by a finished demo job, its config naming `embedding` (and
    saying it carries its calibration), or nothing."""
    config: dict[str, object] = {"seed": 0}
    if embedding is not None:
        config.update(embedding=embedding, calibration=True)
    checkpoint = Checkpoint.objects.create(
        kind="policy", name=name, path=f"checkpoints/{name}.pt", config=config, is_default=default
    )
    TrainingJob.objects.create(
        kind="policy", config=dict(DEMO_POLICY_CONFIG), status=JobStatus.SUCCEEDED, checkpoint=checkpoint
    )
    return checkpoint


def test_a_demo_policy_on_older_embeddings_is_trained_again_and_replaced(make_user, settings, tmp_path) -> None:
    settings.DATA_DIR = tmp_path
    admin = make_user(Role.ADMIN)
    old = demo_checkpoint("demo-old", embedding="all-MiniLM-L6-v2 (texts read from their start)")
    job = demo_policy_ensure(user=admin)
    assert job is not None and job.config["replaces"] == old.pk and job.config["demo"] is True
    assert demo_policy_ensure(user=admin) is None  # already queued

    out = tmp_path / "checkpoints" / "new.pt"
    current = {"embedding": EMBEDDING_ID, "calibration": True}
    new = training_job_finish(job_id=job.pk, path=out, config=current, metrics={}, lineage={})
    old.refresh_from_db()
    assert new.is_default and not old.is_default
    assert new.lineage["replaces"] == "demo-old"
    assert demo_policy_ensure(user=admin) is None  # the default is current now


def test_the_replacement_does_not_take_over_a_checkpoint_promoted_meanwhile(make_user, settings, tmp_path) -> None:
    settings.DATA_DIR = tmp_path
    old = demo_checkpoint("demo-old", embedding="older")
    job = demo_policy_ensure(user=make_user(Role.ADMIN))
    assert job is not None
    Checkpoint.objects.filter(pk=old.pk).update(is_default=False)
    mine = Checkpoint.objects.create(kind="policy", name="mine", path="checkpoints/mine.pt", is_default=True)
    new = training_job_finish(job_id=job.pk, path=tmp_path / "new.pt", config={}, metrics={}, lineage={})
    mine.refresh_from_db()
    assert mine.is_default and not new.is_default


def test_only_a_stale_default_demo_checkpoint_is_trained_again(make_user) -> None:
    admin = make_user(Role.ADMIN)
    demo_checkpoint("current", embedding=EMBEDDING_ID)
    assert demo_policy_ensure(user=admin) is None
    Checkpoint.objects.all().delete()
    TrainingJob.objects.all().delete()
    Checkpoint.objects.create(kind="policy", name="mine", path="checkpoints/mine.pt", config={}, is_default=True)
    assert demo_policy_ensure(user=admin) is None  # someone's own checkpoint: theirs to replace


def test_an_older_row_is_read_by_its_file(make_user, settings, tmp_path) -> None:
    settings.DATA_DIR = tmp_path
    old = demo_checkpoint("demo-file", embedding=None)
    (tmp_path / "checkpoints").mkdir()
    path = tmp_path / "checkpoints" / "demo-file.pt"
    torch.save({"state_dict": {}}, path)  # saved before checkpoints named their embedding
    assert checkpoint_facts(old) == (LEGACY_EMBEDDING, False)
    assert stale_demo_policy() == old
    torch.save({"embedding": EMBEDDING_ID}, path)  # before checkpoints carried their calibration
    assert checkpoint_facts(old) == (EMBEDDING_ID, False)
    assert stale_demo_policy() == old
    torch.save({"embedding": EMBEDDING_ID, "context": {}}, path)
    assert stale_demo_policy() is None
    path.write_bytes(b"not a checkpoint")
    assert checkpoint_facts(old) is None and stale_demo_policy() is None  # unreadable: left alone, logged


def test_replaces_must_name_a_checkpoint_of_the_kind(make_user) -> None:
    rm = Checkpoint.objects.create(kind="reward_model", name="rm", path="checkpoints/rm.pt")
    for bad in (rm.pk, 10**9, "1", True):
        with pytest.raises(Invalid, match="replaces"):
            training_job_create(user=make_user(Role.ADMIN), kind="policy", config={"replaces": bad})


@pytest.mark.parametrize("name", ["", "two words", "x" * 151])
def test_bootstrap_refuses_an_admin_name_django_would_not_take(name: str) -> None:
    from django.core.management import CommandError, call_command

    from studio.models import User

    with pytest.raises(CommandError, match="--admin-username"):
        call_command("bootstrap", "--admin-username", name)
    assert not User.objects.exists()
