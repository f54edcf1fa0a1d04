from __future__ import annotations

import pytest

from studio.models import Role
from studio.services.events import run_event_append
from tests.factories import RunFactory, TaskFactory

pytestmark = pytest.mark.django_db


def test_run_detail_and_visibility(api_as, make_user) -> None:
    me = make_user(Role.VIEWER)
    mine = RunFactory(task=TaskFactory(owner=me), policy="default")
    theirs = RunFactory()
    api = api_as(user=me)
    detail = api.get(f"/runs/{mine.pk}").json_body
    assert detail["status"] == "pending"
    assert detail["task_text"] == mine.task.text
    assert detail["cost_usd"] == 0
    assert api.get(f"/runs/{theirs.pk}").status_code == 404
    assert api_as(Role.ADMIN).get(f"/runs/{theirs.pk}").status_code == 200


def test_run_list_filters(api_as, make_user) -> None:
    researcher = make_user(Role.RESEARCHER)
    RunFactory(status="succeeded", policy="learned", task=TaskFactory(benchmark="mbpp", text="sort a list"))
    RunFactory(status="failed", policy="default", task=TaskFactory(benchmark="gsm8k"))
    api = api_as(user=researcher)
    assert api.get("/runs").json_body["count"] == 2
    assert api.get("/runs", status="succeeded").json_body["count"] == 1
    assert api.get("/runs", policy="default").json_body["count"] == 1
    assert api.get("/runs", benchmark="mbpp").json_body["count"] == 1
    assert api.get("/runs", search="sort").json_body["count"] == 1
    bad = api.get("/runs", status="exploded")
    assert bad.status_code == 422
    assert bad.json_body["errors"][0]["field"] == "status"


def test_run_events_page_by_sequence(api_as, make_user) -> None:
    me = make_user(Role.VIEWER)
    run = RunFactory(task=TaskFactory(owner=me))
    for n in range(5):
        run_event_append(run_id=run.pk, type="node.noted", payload={"key": "root", "n": n})
    api = api_as(user=me)

    first = api.get(f"/runs/{run.pk}/events", limit=2).json_body
    assert [e["seq"] for e in first["items"]] == [1, 2]
    assert first["next_after"] == 2
    rest = api.get(f"/runs/{run.pk}/events", after=2, limit=10).json_body
    assert [e["seq"] for e in rest["items"]] == [3, 4, 5]
    assert rest["next_after"] is None
    assert rest["items"][0]["payload"] == {"key": "root", "n": 2}
    assert api.get(f"/runs/{run.pk}/events", after=-1).status_code == 422
    assert api_as(Role.VIEWER).get(f"/runs/{run.pk}/events").status_code == 404
