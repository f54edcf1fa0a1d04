from __future__ import annotations

import pytest

from studio.models import Admissibility, Node, Primitive, Role, Run, RunEvent
from studio.streaming import watched
from tests.factories import EndpointFactory, RunFactory, TaskFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool_id() -> int:
    endpoint = EndpointFactory()
    Admissibility.objects.create(endpoint=endpoint, primitive=Primitive.objects.get_or_create(name="direct")[0])
    return endpoint.pool_id


def test_create_a_run(api_as, make_user, pool_id: int) -> None:
    me = make_user(Role.VIEWER)
    task = TaskFactory(owner=me)
    api = api_as(user=me)
    body = {
        "task_id": task.pk,
        "pool_id": pool_id,
        "preset": "cheap",
        "max_cost_usd": "0.5",
        "deadline_s": 60,
    }
    response = api.post("/runs", body)
    assert response.status_code == 201, response.json_body
    run = Run.objects.get(pk=response.json_body["id"])
    assert (run.status, run.cost_preference, float(run.max_cost_usd), run.deadline_s) == (
        "pending",
        1.0,
        0.5,
        60,
    )
    assert RunEvent.objects.filter(run=run, type="run.created").exists()
    assert watched(run.pk)  # its first calls stream to the live view that opens next


@pytest.mark.parametrize(
    ("change", "status", "field"),
    [
        ({"max_cost_usd": "-1"}, 422, "max_cost_usd"),
        ({"max_nodes": 0}, 422, "max_nodes"),
        ({"cost_preference": -0.1}, 422, "cost_preference"),
        ({"cost_preference": 101}, 422, "cost_preference"),
        ({"policy": "learned"}, 422, "checkpoint_id"),  # no checkpoint is the default yet
        ({"policy": "learned", "checkpoint_id": 987654}, 422, "checkpoint_id"),
        ({"checkpoint_id": 1}, 422, "checkpoint_id"),  # the default policy loads none
        ({"policy_config": {"checkpoint": "/etc/passwd"}}, 422, "policy_config"),
        ({"preset": "free"}, 422, "preset"),
        ({"policy": "clairvoyant"}, 422, "policy"),
        ({"pool_id": 999999}, 422, "pool_id"),
        ({"task_id": 999999}, 404, None),
    ],
)
def test_bad_run_requests_are_4xx(
    api_as, make_user, pool_id: int, change: dict, status: int, field: str | None
) -> None:
    me = make_user(Role.VIEWER)
    body = {"task_id": TaskFactory(owner=me).pk, "pool_id": pool_id, **change}
    response = api_as(user=me).post("/runs", body)
    assert response.status_code == status, response.json_body
    if field is not None:
        fields = [e["field"] for e in response.json_body.get("errors", [])] or [response.json_body.get("field")]
        assert field in fields
    assert Run.objects.count() == 0


def test_a_viewer_cannot_run_someone_elses_task(api_as, pool_id: int) -> None:
    response = api_as(Role.VIEWER).post("/runs", {"task_id": TaskFactory().pk, "pool_id": pool_id})
    assert response.status_code == 404


def test_cancel_and_cancel_again(api_as, make_user) -> None:
    me = make_user(Role.VIEWER)
    run = RunFactory(task=TaskFactory(owner=me), status="running")
    api = api_as(user=me)
    assert api.post(f"/runs/{run.pk}/cancel").json_body["status"] == "cancelled"
    again = api.post(f"/runs/{run.pk}/cancel")
    assert again.status_code == 409
    assert "already ended" in again.json_body["detail"]
    assert api_as(Role.VIEWER).post(f"/runs/{run.pk}/cancel").status_code == 404


def test_tree_rolls_totals_up_per_subtree(api_as, make_user) -> None:
    me = make_user(Role.VIEWER)
    run = RunFactory(task=TaskFactory(owner=me))
    root = Node.objects.create(run=run, key="root", kind="root", text="t", tokens_in=1, cost_usd="0.1")
    Node.objects.create(run=run, key="root.a", parent=root, text="a", tokens_in=10, cost_usd="0.2")
    Node.objects.create(run=run, key="root.b", parent=root, text="b", tokens_in=100, cost_usd="0.3")
    tree = api_as(user=me).get(f"/runs/{run.pk}/tree").json_body
    nodes = {n["key"]: n for n in tree["nodes"]}
    assert nodes["root"]["subtree"]["tokens_in"] == 111
    assert nodes["root"]["subtree"]["cost_usd"] == pytest.approx(0.6)
    assert nodes["root.a"]["parent"] == "root"
    assert tree["run"]["id"] == run.pk


def test_each_node_of_the_tree_names_its_pair(api_as, make_user) -> None:
    me = make_user(Role.VIEWER)
    endpoint = EndpointFactory()
    direct = Primitive.objects.get_or_create(name="direct")[0]
    run = RunFactory(task=TaskFactory(owner=me), pool_id=endpoint.pool_id)
    root = Node.objects.create(run=run, key="root", kind="root", text="t", endpoint=endpoint, primitive=direct)
    Node.objects.create(run=run, key="root.a", parent=root, text="a")
    nodes = {n["key"]: n for n in api_as(user=me).get(f"/runs/{run.pk}/tree").json_body["nodes"]}
    assert nodes["root"]["pair"] == {
        "endpoint_id": endpoint.pk, "endpoint": endpoint.name, "model": endpoint.model, "primitive": "direct",
    }  # fmt: skip
    assert nodes["root.a"]["pair"] is None  # not solved by a pair (yet)


def test_rerun_validates_the_node_and_pair(api_as, make_user, pool_id: int) -> None:
    me = make_user(Role.VIEWER)
    run = RunFactory(task=TaskFactory(owner=me), pool_id=pool_id, status="succeeded")
    Node.objects.create(run=run, key="root", kind="root", text="t", status="succeeded")
    api = api_as(user=me)
    assert api.post(f"/runs/{run.pk}/nodes/nope/rerun", {"endpoint_id": 1, "primitive": "direct"}).status_code == 404
    bad_pair = api.post(f"/runs/{run.pk}/nodes/root/rerun", {"endpoint_id": 999999, "primitive": "direct"})
    assert bad_pair.status_code == 422
    assert "not an admissible pair" in bad_pair.json_body["detail"]


def test_composite_task_from_unknown_items_is_422(api_as) -> None:
    response = api_as().post("/tasks/composite", {"items": [{"source": "demo", "item_id": "missing"}]})
    assert response.status_code == 422
    assert "no recorded item" in response.json_body["detail"]


def test_best_of_without_a_reward_model_is_422(api_as, make_user, pool_id: int) -> None:
    me = make_user(Role.VIEWER)
    body = {"task_id": TaskFactory(owner=me).pk, "pool_id": pool_id, "best_of": 4}
    response = api_as(user=me).post("/runs", body)
    assert response.status_code == 422, response.json_body
    assert response.json_body["field"] == "best_of"
    assert "best_of needs a default reward model; train and promote one" in response.json_body["detail"]
    assert Run.objects.count() == 0
    body["best_of"] = 1  # one candidate needs no reward model
    assert api_as(user=me).post("/runs", body).status_code == 201


def test_a_learned_runs_config_is_checked_when_the_run_is_asked_for(
    api_as, make_user, pool_id: int, settings, tmp_path
) -> None:
    """`policy_config.cascade`: a malformed gate, or `true` on a checkpoint that carries no gate,
    is a 422 naming `policy_config`; `true` on the shipped demo policy (which carries its
    gates) makes the run."""
    import shutil

    import torch

    from orchestrator.ship_policy import SHIPPED
    from studio.models import Checkpoint

    settings.DATA_DIR = tmp_path
    (tmp_path / "checkpoints").mkdir()
    shutil.copyfile(SHIPPED, tmp_path / "checkpoints" / "demo.pt")
    payload = torch.load(SHIPPED, weights_only=False)
    del payload["cascade"]
    torch.save(payload, tmp_path / "checkpoints" / "old.pt")
    demo = Checkpoint.objects.create(kind="policy", name="demo", path="checkpoints/demo.pt", is_default=True)
    old = Checkpoint.objects.create(kind="policy", name="old", path="checkpoints/old.pt")
    me = make_user(Role.VIEWER)
    api = api_as(user=me)
    task = TaskFactory(owner=me).pk
    refused = (
        (demo, {"cascade": {"gsm8k": [1, 5]}}, "escalation 0 or 1"),
        (old, {"cascade": True}, "no cascade gate"),
        (demo, {"best_of_cost": -1}, "best_of_cost must be a non-negative number"),
    )
    for checkpoint, config, words in refused:
        body = {"task_id": task, "pool_id": pool_id, "policy": "learned", "checkpoint_id": checkpoint.pk,
                "policy_config": config}  # fmt: skip
        response = api.post("/runs", body)
        assert response.status_code == 422, response.json_body
        assert words in str(response.json_body) and "policy_config" in str(response.json_body)
    assert Run.objects.count() == 0
    body = {"task_id": task, "pool_id": pool_id, "policy": "learned", "policy_config": {"cascade": True}}
    response = api.post("/runs", body)
    assert response.status_code == 201, response.json_body
    assert Run.objects.get().policy_config == {"cascade": True}
