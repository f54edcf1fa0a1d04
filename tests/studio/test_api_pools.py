from __future__ import annotations

import pytest

from orchestrator.outcomes import prompt_key
from studio.crypto import decrypt_secret
from studio.models import Admissibility, ModelEndpoint, Primitive, RecordedOutcome, Role
from studio.selectors.pools import pool_calibration
from tests.conftest import Api
from tests.factories import EndpointFactory, PoolFactory, PrimitiveFactory, RunFactory

pytestmark = pytest.mark.django_db

PLANTED_KEY = "sk-planted-0123456789abcdefSECRET"


def test_pool_crud(admin_api: Api) -> None:
    created = admin_api.post("/pools", {"name": "prod", "description": "paid APIs"})
    assert created.status_code == 201
    pool_id = created.json_body["id"]

    assert admin_api.get(f"/pools/{pool_id}").json_body["name"] == "prod"
    patched = admin_api.patch(f"/pools/{pool_id}", {"description": "changed"})
    assert patched.json_body == {**patched.json_body, "name": "prod", "description": "changed"}

    listed = admin_api.get("/pools", search="pro")
    assert listed.json_body["count"] == 1

    assert admin_api.delete(f"/pools/{pool_id}").status_code == 204
    assert admin_api.get(f"/pools/{pool_id}").status_code == 404


def _recorded(source: str, model: str) -> None:
    prompt = f"What is 1 + 1? ({source})"
    RecordedOutcome.objects.create(
        source=source, item_id=f"{source}.1", benchmark="gsm8k", domain="math", prompt=prompt,
        prompt_sha256=prompt_key(prompt), model=model, primitive="direct", response="2", score=1.0,
        prompt_tokens=12, completion_tokens=3, cost_usd=0.00125,
    )  # fmt: skip


def test_a_calibration_source_needs_recorded_outcomes_for_the_pools_models(admin_api: Api) -> None:
    endpoint = EndpointFactory(name="m", model="replay/model-a")
    pool_url = f"/pools/{endpoint.pool_id}"
    _recorded("probe-a", "model-a")
    _recorded("probe-b", "model-b")  # another pool's model
    for source in ("nowhere", "probe-b"):
        response = admin_api.patch(pool_url, {"calibration_source": source})
        assert response.status_code == 422, source
        assert response.json_body["field"] == "calibration_source"
        assert f"Source {source!r} has no recorded outcome for a model of pool" in response.json_body["detail"]
    assert admin_api.get(pool_url).json_body["calibration_source"] == ""
    assert pool_calibration(pool_id=endpoint.pool_id) is None

    assert admin_api.patch(pool_url, {"calibration_source": "probe-a"}).json_body["calibration_source"] == "probe-a"
    assert admin_api.get(pool_url).json_body["calibration_source"] == "probe-a"
    # What a learned run on the pool calibrates on: its models' rows of that source only.
    calibration = pool_calibration(pool_id=endpoint.pool_id)
    assert calibration is not None
    version, records = calibration
    assert records == [
        {
            "item_id": "probe-a.1", "prompt": "What is 1 + 1? (probe-a)", "domain": "math", "benchmark": "gsm8k",
            "model": "model-a", "primitive": "direct", "score": 1.0, "cost_usd": 0.00125, "prompt_tokens": 12,
            "completion_tokens": 3, "response": "2",
        }
    ]  # fmt: skip
    assert pool_calibration(pool_id=endpoint.pool_id) == (version, records)  # unchanged rows: the same version
    RecordedOutcome.objects.create(
        source="probe-a", item_id="probe-a.2", benchmark="gsm8k", domain="math", prompt="2 + 2?",
        prompt_sha256=prompt_key("2 + 2?"), model="model-a", primitive="direct", response="4", score=0.0,
    )  # fmt: skip
    newer = pool_calibration(pool_id=endpoint.pool_id)
    assert newer is not None and newer[0] != version and [r["item_id"] for r in newer[1]] == ["probe-a.1", "probe-a.2"]
    assert admin_api.patch(pool_url, {"calibration_source": ""}).json_body["calibration_source"] == ""
    assert pool_calibration(pool_id=endpoint.pool_id) is None


def test_duplicate_pool_name_is_409(admin_api: Api) -> None:
    admin_api.post("/pools", {"name": "dup"})
    response = admin_api.post("/pools", {"name": "dup"})
    assert response.status_code == 409
    assert "already exists" in response.json_body["detail"]


def test_unknown_ids_are_404(admin_api: Api) -> None:
    for path in ["/pools/999999", "/endpoints/999999", "/primitives/999999", "/admissibility/999999"]:
        response = admin_api.get(path)
        assert response.status_code == 404, path
        assert "does not exist" in response.json_body["detail"]


def test_invalid_payload_is_422_naming_the_field(admin_api: Api) -> None:
    pool = PoolFactory()
    response = admin_api.post(f"/pools/{pool.pk}/endpoints", {"name": "m", "model": "x", "input_cost_per_mtok": -1})
    assert response.status_code == 422
    assert response.json_body["errors"][0]["field"] == "input_cost_per_mtok"
    assert "input_cost_per_mtok" in response.json_body["detail"]


def test_null_for_a_required_field_is_422(admin_api: Api) -> None:
    endpoint = EndpointFactory()
    response = admin_api.patch(f"/endpoints/{endpoint.pk}", {"name": None})
    assert response.status_code == 422
    assert response.json_body["field"] == "name"


def test_bad_api_base_is_422(admin_api: Api) -> None:
    pool = PoolFactory()
    response = admin_api.post(f"/pools/{pool.pk}/endpoints", {"name": "m", "model": "x", "api_base": "ftp://x"})
    assert response.status_code == 422
    assert response.json_body["field"] == "api_base"


def test_malformed_json_is_400(admin_api: Api) -> None:
    response = admin_api.client.post("/api/pools", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("The request body is not valid JSON")


def test_endpoint_key_is_encrypted_and_never_returned(admin_api: Api) -> None:
    pool = PoolFactory()
    bodies = []
    created = admin_api.post(
        f"/pools/{pool.pk}/endpoints",
        {"name": "gpt", "model": "openai/gpt-4o-mini", "api_key": PLANTED_KEY, "input_cost_per_mtok": "0.15"},
    )
    assert created.status_code == 201
    assert created.json_body["has_api_key"] is True
    assert created.json_body["input_cost_per_mtok"] == 0.15
    endpoint_id = created.json_body["id"]

    stored = ModelEndpoint.objects.get(pk=endpoint_id).api_key_encrypted
    assert stored and stored != PLANTED_KEY and PLANTED_KEY not in stored
    assert decrypt_secret(stored) == PLANTED_KEY

    bodies.append(created.content)
    bodies.append(admin_api.get(f"/endpoints/{endpoint_id}").content)
    bodies.append(admin_api.get(f"/pools/{pool.pk}/endpoints").content)
    bodies.append(admin_api.patch(f"/endpoints/{endpoint_id}", {"enabled": False}).content)
    bodies.append(admin_api.get("/openapi.json").content)
    # A validation error must not echo the key back either.
    bodies.append(admin_api.post(f"/pools/{pool.pk}/endpoints", {"model": "m", "api_key": PLANTED_KEY}).content)
    for body in bodies:
        assert PLANTED_KEY.encode() not in body

    cleared = admin_api.patch(f"/endpoints/{endpoint_id}", {"clear_api_key": True})
    assert cleared.json_body["has_api_key"] is False
    assert ModelEndpoint.objects.get(pk=endpoint_id).api_key_encrypted == ""


def test_viewer_reads_pools_but_cannot_write(api_as) -> None:
    endpoint = EndpointFactory()
    viewer = api_as(Role.VIEWER)
    assert viewer.get(f"/pools/{endpoint.pool_id}/endpoints").json_body["count"] == 1
    assert viewer.patch(f"/endpoints/{endpoint.pk}", {"enabled": False}).status_code == 403
    assert viewer.delete(f"/pools/{endpoint.pool_id}").status_code == 403
    assert viewer.post("/primitives", {"name": "cot"}).status_code == 403


def test_primitive_crud(admin_api: Api) -> None:
    created = admin_api.post("/primitives", {"name": "self_consistency", "parameters": {"k": 5}})
    assert created.status_code == 201
    primitive_id = created.json_body["id"]
    patched = admin_api.patch(f"/primitives/{primitive_id}", {"parameters": {"k": 7}})
    assert patched.json_body["parameters"] == {"k": 7}
    assert admin_api.post("/primitives", {"name": "Bad Name"}).status_code == 422
    assert admin_api.delete(f"/primitives/{primitive_id}").status_code == 204


def test_admissibility_crud_and_uniqueness(admin_api: Api) -> None:
    endpoint = EndpointFactory()
    primitive = PrimitiveFactory(name="cot")
    body = {"endpoint_id": endpoint.pk, "primitive_id": primitive.pk, "limits": {"max_tokens": 512}}
    created = admin_api.post("/admissibility", body)
    assert created.status_code == 201
    assert created.json_body["primitive_name"] == "cot"
    assert admin_api.post("/admissibility", body).status_code == 409

    row_id = created.json_body["id"]
    assert admin_api.patch(f"/admissibility/{row_id}", {"allowed": False}).json_body["allowed"] is False
    listed = admin_api.get("/admissibility", pool_id=endpoint.pool_id)
    assert [row["id"] for row in listed.json_body["items"]] == [row_id]
    assert admin_api.delete(f"/admissibility/{row_id}").status_code == 204


def test_admissibility_for_unknown_endpoint_is_404(admin_api: Api) -> None:
    primitive = PrimitiveFactory()
    response = admin_api.post("/admissibility", {"endpoint_id": 987654, "primitive_id": primitive.pk})
    assert response.status_code == 404


def test_an_endpoint_and_its_pairs_in_one_step(admin_api: Api) -> None:
    for name in ("direct", "cot"):
        Primitive.objects.get_or_create(name=name)
    pool = PoolFactory()
    body = {"name": "mine", "model": "openai/my-model", "api_key": "sk-mine", "primitives": ["direct", "cot", "direct"]}
    response = admin_api.post(f"/pools/{pool.pk}/endpoints", body)
    assert response.status_code == 201, response.json_body
    pairs = Admissibility.objects.filter(endpoint_id=response.json_body["id"], allowed=True)
    assert sorted(pairs.values_list("primitive__name", flat=True)) == ["cot", "direct"]


def test_an_unknown_primitive_creates_nothing(admin_api: Api) -> None:
    Primitive.objects.get_or_create(name="direct")
    pool = PoolFactory()
    body = {"name": "mine", "model": "openai/my-model", "primitives": ["direct", "telepathy"]}
    response = admin_api.post(f"/pools/{pool.pk}/endpoints", body)
    assert response.status_code == 422 and response.json_body["field"] == "primitives"
    assert response.json_body["detail"].startswith("No primitive named 'telepathy'; the primitives are ")
    assert not ModelEndpoint.objects.filter(pool=pool).exists()


def test_pool_used_by_a_run_cannot_be_deleted(admin_api: Api) -> None:
    pool = PoolFactory()
    RunFactory(pool=pool)
    response = admin_api.delete(f"/pools/{pool.pk}")
    assert response.status_code == 409
    # What to do instead is something a pool has: pairs to turn off (it has no enabled flag).
    assert response.json_body["detail"] == (
        f"Pool {pool.pk} is used by existing runs and cannot be deleted; turn its pairs off instead "
        "(their admissibility's allowed), and no new run can use it; its runs keep their history."
    )
    assert admin_api.get(f"/pools/{pool.pk}").status_code == 200


def test_lists_paginate(admin_api: Api) -> None:
    for n in range(7):
        PoolFactory(name=f"p{n}")
    page = admin_api.get("/pools", limit=3, offset=3)
    assert page.json_body["count"] == 7
    assert [p["name"] for p in page.json_body["items"]] == ["p3", "p4", "p5"]
