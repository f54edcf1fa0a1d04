"""Collections through the API: create, read with cell counts, cancel, resume; bad input named."""

from __future__ import annotations

from typing import Any

import pytest

from studio.models import Admissibility, Collection, Primitive, Role
from studio.services.pools import endpoint_create
from studio.services.tasks import task_create
from tests.factories import PoolFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup() -> dict[str, Any]:
    pool = PoolFactory()
    endpoint = endpoint_create(pool_id=pool.pk, name="m", model="openai/m", api_base="http://127.0.0.1:9/v1")
    Admissibility.objects.create(endpoint=endpoint, primitive=Primitive.objects.get_or_create(name="direct")[0])
    owner = UserFactory()
    tasks = [
        task_create(owner=owner, text=f"What is {k} + 1?", gold_answer=str(k + 1), checker="gsm8k", domain="math").pk
        for k in range(3)
    ]
    return {"pool_id": pool.pk, "task_ids": tasks, "pairs": [{"endpoint_id": endpoint.pk, "primitive": "direct"}],
            "budget_usd": 0.5}  # fmt: skip


def test_a_researcher_queues_a_collection_follows_cancels_and_resumes_it(
    api_as, setup: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    api = api_as(Role.RESEARCHER)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        created = api.post("/collections", setup | {"max_concurrency": 2, "name": "first"})
    assert created.status_code == 201, created.json_body
    body = created.json_body
    assert len(callbacks) == 1  # sent to the workers once committed
    assert body["status"] == "queued" and body["source"] == f"collection-{body['id']}" and body["name"] == "first"
    assert body["cells"] == {"total": 3, "pending": 3, "started": 0, "recorded": 0, "failed": 0}
    assert body["budget_usd"] == 0.5 and body["spent_usd"] == 0 and body["max_concurrency"] == 2
    page = api.get("/collections?limit=1").json_body
    assert page["count"] == 1 and page["items"][0]["id"] == body["id"]

    assert api.post(f"/collections/{body['id']}/resume", {}).status_code == 409  # still queued
    cancelled = api.post(f"/collections/{body['id']}/cancel", {}).json_body
    assert cancelled["status"] == "cancelled"
    resumed = api.post(f"/collections/{body['id']}/resume", {"budget_usd": 2}).json_body
    assert resumed["status"] == "queued" and resumed["budget_usd"] == 2
    assert api.get("/collections/999999").status_code == 404


@pytest.mark.parametrize(
    ("change", "status", "needle"),
    [
        ({"budget_usd": 0}, 422, "budget_usd"),
        ({"budget_usd": "1"}, 422, "budget_usd"),
        ({"max_concurrency": 65}, 422, "max_concurrency"),
        ({"pairs": []}, 422, "pairs"),
        ({"task_ids": []}, 422, "task_ids"),
        ({"pairs": [{"endpoint_id": 1, "primitive": "cot"}]}, 422, "Not admissible"),
        ({"task_ids": [999_999]}, 422, "Unknown task"),
        ({"pool_id": 999_999}, 422, "no pool"),
    ],
)
def test_a_bad_collection_is_refused_and_nothing_is_made(
    api_as, setup: dict[str, Any], change: dict[str, Any], status: int, needle: str
) -> None:
    response = api_as(Role.RESEARCHER).post("/collections", setup | change)
    assert response.status_code == status
    assert needle in str(response.json_body)
    assert not Collection.objects.exists()


def test_a_viewer_may_not_collect(api_as, setup: dict[str, Any]) -> None:
    assert api_as(Role.VIEWER).post("/collections", setup).status_code == 403
    assert api_as(Role.VIEWER).get("/collections").status_code == 403
