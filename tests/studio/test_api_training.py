"""Training jobs and checkpoints through the API, and the live progress socket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.test import override_settings

from studio.asgi import application
from studio.event_schemas import TrainingProgress
from studio.models import Checkpoint, JobStatus, Role, TrainingJob
from studio.services.jobs import job_start
from studio.services.training import training_job_progress
from tests.factories import UserFactory
from tests.studio.test_consumers import ORIGIN, session_cookie
from tests.support.websocket import handshake

pytestmark = pytest.mark.django_db


def test_a_researcher_queues_a_policy_job_and_reads_it(api_as, django_capture_on_commit_callbacks: Any) -> None:
    api = api_as(Role.RESEARCHER)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        created = api.post(
            "/training/jobs", {"kind": "policy", "config": {"seed": 3, "outcomes": ["routerbench.jsonl.gz"]}}
        )
    assert created.status_code == 201, created.json_body
    assert created.json_body["status"] == "queued"
    assert len(callbacks) == 1  # the job is sent to queue `training` once committed
    job_id = created.json_body["id"]
    assert api.get(f"/training/jobs/{job_id}").json_body["config"]["seed"] == 3
    assert [j["id"] for j in api.get("/training/jobs").json_body["items"]] == [job_id]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "reward_model", "config": {"rm": {"train": {"epochz": 3}}}}, "config.rm"),
        ({"kind": "reward_model", "config": {"rm": []}}, "config.rm"),
        ({"kind": "reward_model", "config": {"live_runs": "yes"}}, "config.live_runs"),
        ({"config": {"seed": -1}}, "config.seed"),
        ({"config": {"outcomes": ["nope.jsonl.gz"]}}, "config.outcomes"),
        ({"config": {"outcomes": "routerbench.jsonl.gz"}}, "config.outcomes"),
        ({"config": {"replaces": 999_999}}, "config.replaces"),
        ({"config": {"replaces": "1"}}, "config.replaces"),
        ({"config": {"learned": {"sft": {"lam_min": 3}}}}, "config.learned"),
        ({"config": {"learned": {"sft": {"epochz": 3}}}}, "config.learned"),
        ({"config": {"learned": []}}, "config.learned"),
        ({"config": {"sft": {"epochs": 3}}}, "config.sft"),  # a `learned` section at the top: not ignored
        ({"config": {"rm": {}}}, "config.rm"),  # the reward model's options on a policy job
        ({"kind": "reward_model", "config": {"learned": {}}}, "config.learned"),
        ({"config": {"demo": "yes"}}, "config.demo"),
        ({"config": {"unseen": 1}}, "config.unseen"),
        ({"kind": "reward_model", "config": {"unseen": True}}, "config.unseen"),  # a policy's option only
        ({"config": {"guide": 999_999}}, "config.guide"),
        ({"config": {"guide": "1"}}, "config.guide"),
        ({"config": {"guide": True}}, "config.guide"),
        ({"kind": "reward_model", "config": {"guide": 1}}, "config.guide"),  # a policy's option only
        ({"config": {"collections": [999_999]}}, "config.collections"),
        ({"config": {"collections": "1"}}, "config.collections"),
        ({"kind": "reward_model", "config": {"collections": [True]}}, "config.collections.0"),
    ],
)
def test_a_bad_job_is_422_and_not_queued(api_as, body: dict[str, Any], field: str) -> None:
    response = api_as(Role.RESEARCHER).post("/training/jobs", body)
    assert response.status_code == 422
    assert response.json_body["field"] == field
    assert TrainingJob.objects.count() == 0


def test_a_bad_policy_config_is_named_before_the_job_is_queued(api_as) -> None:
    api = api_as(Role.RESEARCHER)
    response = api.post("/training/jobs", {"kind": "policy", "config": {"learned": {"sft": {"lam_min": 3}}}})
    assert "sft: lam_min (3.0) must be at most lam_max (2.0)" in response.json_body["detail"]
    response = api.post("/training/jobs", {"kind": "policy", "config": {"sft": {}, "seeds": 1}})
    assert response.status_code == 422
    assert {error["field"] for error in response.json_body["errors"]} == {"config.sft", "config.seeds"}
    response = api.post("/training/jobs", {"kind": "policy", "config": {"rm": {}}})
    assert (
        "Not an option of a policy job: rm; known: collections, demo, guide, learned, outcomes, replaces, seed, unseen."
        in (response.json_body["detail"])
    )
    good = {"learned": {"sft": {"epochs": 2}, "rl": {"iterations": 0}}, "seed": 1}
    assert api.post("/training/jobs", {"kind": "policy", "config": good}).status_code == 201
    # the Training page's "For unseen pools" sends this
    assert api.post("/training/jobs", {"kind": "policy", "config": {**good, "unseen": True}}).status_code == 201


def test_a_guide_is_a_reward_model_whose_file_is_there(api_as, tmp_path: Path) -> None:
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "rm.pt").write_bytes(b"weights")
    rm = Checkpoint.objects.create(kind="reward_model", name="rm", path="checkpoints/rm.pt")
    gone = Checkpoint.objects.create(kind="reward_model", name="gone", path="checkpoints/gone.pt")
    policy = Checkpoint.objects.create(kind="policy", name="p", path="checkpoints/rm.pt")
    api = api_as(Role.RESEARCHER)
    with override_settings(DATA_DIR=tmp_path):
        for guide, message in (
            (policy.pk, "must be the id of a reward_model checkpoint"),
            (gone.pk, "is missing"),
        ):
            response = api.post("/training/jobs", {"kind": "policy", "config": {"guide": guide}})
            assert response.status_code == 422 and message in response.json_body["detail"]
        response = api.post("/training/jobs", {"kind": "policy", "config": {"guide": rm.pk, "unseen": True}})
        assert response.status_code == 422 and "does not go with unseen" in response.json_body["detail"]
        assert TrainingJob.objects.count() == 0
        created = api.post("/training/jobs", {"kind": "policy", "config": {"guide": rm.pk}})
        assert created.status_code == 201 and created.json_body["config"]["guide"] == rm.pk


def test_viewers_and_labelers_may_not_train(api_as) -> None:
    for role in (Role.VIEWER, Role.LABELER):
        api = api_as(role)
        assert api.post("/training/jobs", {}).status_code == 403
        assert api.get("/checkpoints").status_code == 403


def test_progress_is_kept_for_curves(make_user) -> None:
    job = TrainingJob.objects.create(kind="policy", created_by=make_user(Role.RESEARCHER))
    assert job_start(TrainingJob, job.pk) is not None
    assert job_start(TrainingJob, job.pk) is None  # a second delivery does not start it again
    training_job_progress(job_id=job.pk, progress=0.25, stage="sft", metrics={"loss/sft": 1.5})
    training_job_progress(job_id=job.pk, progress=0.5, stage="sft", metrics={"loss/sft": 0.9})
    job.refresh_from_db()
    assert (job.status, job.progress, job.metrics) == (JobStatus.RUNNING, 0.5, {"loss/sft": 0.9})
    assert [point["loss/sft"] for point in job.history] == [1.5, 0.9]


def test_promote_switches_the_default(api_as, tmp_path: Path) -> None:
    (tmp_path / "checkpoints").mkdir()
    for name in ("a", "b"):
        (tmp_path / "checkpoints" / f"{name}.pt").write_bytes(b"weights")
    first = Checkpoint.objects.create(kind="policy", name="a", path="checkpoints/a.pt", is_default=True)
    second = Checkpoint.objects.create(kind="policy", name="b", path="checkpoints/b.pt")
    missing = Checkpoint.objects.create(kind="policy", name="c", path="checkpoints/c.pt")
    api = api_as(Role.RESEARCHER)
    with override_settings(DATA_DIR=tmp_path):
        response = api.post(f"/checkpoints/{second.pk}/promote")
        assert response.status_code == 200
        assert response.json_body["is_default"] is True
        gone = api.post(f"/checkpoints/{missing.pk}/promote")
        assert gone.status_code == 409
        assert "missing" in gone.json_body["detail"]
    assert api.post("/checkpoints/987654/promote").status_code == 404
    first.refresh_from_db()
    assert first.is_default is False
    assert [c["name"] for c in api.get("/checkpoints", kind="policy").json_body["items"] if c["is_default"]] == ["b"]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_progress_socket_sends_the_state_then_updates() -> None:
    from channels.db import database_sync_to_async

    researcher = await database_sync_to_async(UserFactory)(role=Role.RESEARCHER)
    viewer = await database_sync_to_async(UserFactory)(role=Role.VIEWER)
    job = await TrainingJob.objects.acreate(kind="policy", created_by=researcher)

    async def socket(user: Any) -> WebsocketCommunicator:
        cookie = await database_sync_to_async(session_cookie)(user)
        return WebsocketCommunicator(application, f"/ws/training/{job.pk}/", headers=[ORIGIN, cookie])

    refused = await socket(viewer)
    assert await handshake(refused) == (False, 4403)
    watcher = await socket(researcher)
    connected, _ = await watcher.connect()
    assert connected
    first = await watcher.receive_json_from(timeout=5)
    assert (first["kind"], first["status"], first["progress"]) == ("progress", "queued", 0.0)
    TrainingProgress.model_validate(first, strict=True)  # what the browser's types say
    await database_sync_to_async(job_start)(TrainingJob, job.pk)
    await database_sync_to_async(training_job_progress)(job_id=job.pk, progress=0.4, stage="rl", metrics={"x": 1.0})
    seen = [TrainingProgress.model_validate(await watcher.receive_json_from(timeout=5)).model_dump() for _ in range(2)]
    assert [(m["status"], m["progress"], m["message"]) for m in seen] == [
        ("running", 0.0, "started"),
        ("running", 0.4, "rl"),
    ]
    await watcher.disconnect()
