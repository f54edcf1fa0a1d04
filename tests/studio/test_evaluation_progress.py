"""An evaluation's progress over /ws/evaluations/<id>/, through the real ASGI stack and
channels-redis: the evaluation as it stands, then each update its worker writes."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from studio.asgi import application
from studio.event_schemas import EvaluationProgress
from studio.models import EvaluationRun, JobStatus, Role, User
from studio.services.jobs import job_end, job_fail, job_progress, job_start
from tests.factories import UserFactory
from tests.studio.test_consumers import ORIGIN, session_cookie
from tests.support.websocket import handshake

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def watch(user: User | None, evaluation: EvaluationRun) -> WebsocketCommunicator:
    headers = [ORIGIN]
    if user is not None:
        headers.append(await database_sync_to_async(session_cookie)(user))
    return WebsocketCommunicator(application, f"/ws/evaluations/{evaluation.pk}/", headers=headers)


async def receive(ws: WebsocketCommunicator, n: int) -> list[dict[str, Any]]:
    messages = [await ws.receive_json_from(timeout=5) for _ in range(n)]
    for message in messages:
        EvaluationProgress.model_validate(message, strict=True)  # what the browser's types say
    return messages


async def test_a_researcher_sees_the_state_then_every_update_to_the_end() -> None:
    researcher = await database_sync_to_async(UserFactory)(role=Role.RESEARCHER)
    evaluation = await database_sync_to_async(EvaluationRun.objects.create)(
        config={"preset": "quick"}, created_by=researcher
    )
    ws = await watch(researcher, evaluation)
    connected, _ = await ws.connect()
    assert connected
    (first,) = await receive(ws, 1)
    assert first == {"kind": "progress", "id": evaluation.pk, "status": "queued", "progress": 0.0, "message": ""}

    await database_sync_to_async(job_start)(EvaluationRun, evaluation.pk, worker="w1")
    for step, method in enumerate(("random", "cheapest"), start=1):
        await database_sync_to_async(job_progress)(EvaluationRun, evaluation.pk, progress=step / 4, message=method)
    await database_sync_to_async(job_end)(
        EvaluationRun, evaluation.pk, status=JobStatus.SUCCEEDED, message="done", report={"methods": {}}
    )
    seen = await receive(ws, 4)
    assert [(m["status"], m["progress"], m["message"]) for m in seen] == [
        ("running", 0.0, "started"),
        ("running", 0.25, "random"),
        ("running", 0.5, "cheapest"),
        ("succeeded", 1.0, "done"),
    ]
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


async def test_a_failure_reaches_the_watcher_with_its_reason() -> None:
    admin = await database_sync_to_async(UserFactory)(role=Role.ADMIN)
    evaluation = await database_sync_to_async(EvaluationRun.objects.create)(config={}, created_by=admin)
    ws = await watch(admin, evaluation)
    assert (await ws.connect())[0]
    await receive(ws, 1)
    await database_sync_to_async(job_fail)(EvaluationRun, evaluation.pk, message="The worker stopped.")
    (failed,) = await receive(ws, 1)
    assert (failed["status"], failed["message"]) == ("failed", "The worker stopped.")
    await ws.disconnect()


@pytest.mark.parametrize(("role", "code"), [(None, 4401), (Role.VIEWER, 4403), (Role.LABELER, 4403)])
async def test_only_researchers_and_admins_may_watch(role: Role | None, code: int) -> None:
    owner = await database_sync_to_async(UserFactory)(role=Role.RESEARCHER)
    evaluation = await database_sync_to_async(EvaluationRun.objects.create)(config={}, created_by=owner)
    user = await database_sync_to_async(UserFactory)(role=role) if role else None
    assert await handshake(await watch(user, evaluation)) == (False, code)


async def test_an_unknown_evaluation_is_refused() -> None:
    researcher = await database_sync_to_async(UserFactory)(role=Role.RESEARCHER)
    ws = WebsocketCommunicator(
        application,
        "/ws/evaluations/987654/",
        headers=[ORIGIN, await database_sync_to_async(session_cookie)(researcher)],
    )
    assert await handshake(ws) == (False, 4403)
