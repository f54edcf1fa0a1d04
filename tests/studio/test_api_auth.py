from __future__ import annotations

import json

import pytest
from django.test import Client

from studio.models import ApiToken, Role
from tests.conftest import Api

pytestmark = pytest.mark.django_db


def test_missing_auth_is_401_with_a_sentence(anonymous_api: Api) -> None:
    response = anonymous_api.get("/tasks")
    assert response.status_code == 401
    assert "Authentication required" in response.json_body["detail"]


def test_session_reads(api_as) -> None:
    api = api_as(Role.VIEWER)
    response = api.get("/auth/me")
    assert response.status_code == 200
    assert response.json_body["role"] == "viewer"


def test_session_write_needs_csrf(make_user) -> None:
    user = make_user(Role.VIEWER)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    body = json.dumps({"text": "2+2?"})

    refused = client.post("/api/tasks", body, content_type="application/json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]

    token = client.get("/api/auth/csrf").json()["csrf_token"]
    accepted = client.post("/api/tasks", body, content_type="application/json", headers={"X-CSRFToken": token})
    assert accepted.status_code == 201


def test_login_and_logout(make_user) -> None:
    make_user(Role.LABELER, username="lab")
    client = Client(enforce_csrf_checks=True)
    token = client.get("/api/auth/csrf").json()["csrf_token"]
    headers = {"X-CSRFToken": token}

    wrong = client.post(
        "/api/auth/login",
        {"username": "lab", "password": "nope"},
        content_type="application/json",
        headers=headers,
    )
    assert wrong.status_code == 401
    assert wrong.json()["detail"] == "Wrong username or password."

    right = client.post(
        "/api/auth/login",
        {"username": "lab", "password": "pw"},
        content_type="application/json",
        headers=headers,
    )
    assert right.status_code == 200
    assert right.json()["role"] == "labeler"
    assert client.get("/api/auth/me").status_code == 200

    headers = {"X-CSRFToken": client.cookies["csrftoken"].value}
    assert client.post("/api/auth/logout", headers=headers).status_code == 204
    assert client.get("/api/auth/me").status_code == 401


def test_login_without_csrf_is_refused(make_user) -> None:
    make_user(username="x")
    client = Client(enforce_csrf_checks=True)
    response = client.post("/api/auth/login", {"username": "x", "password": "pw"}, content_type="application/json")
    assert response.status_code == 403


def test_token_lifecycle(api_as, make_user) -> None:
    user = make_user(Role.RESEARCHER)
    api = api_as(user=user)

    created = api.post("/tokens", {"name": "ci script"})
    assert created.status_code == 201
    raw = created.json_body["token"]
    assert raw.startswith("orc_")

    stored = ApiToken.objects.get(pk=created.json_body["id"])
    assert stored.digest != raw and raw not in stored.digest
    assert raw not in json.dumps(api.get("/tokens").json_body)

    bearer = Api(Client(), {"Authorization": f"Bearer {raw}"})
    me = bearer.get("/auth/me")
    assert me.status_code == 200
    assert me.json_body["username"] == user.username
    # A token needs no CSRF token for writes.
    assert bearer.post("/tasks", {"text": "1+1?"}).status_code == 201

    assert api.delete(f"/tokens/{stored.pk}").status_code == 204
    assert bearer.get("/auth/me").status_code == 401


def test_unknown_token_is_401(anonymous_api: Api) -> None:
    api = Api(Client(), {"Authorization": "Bearer orc_not-a-real-token"})
    assert api.get("/auth/me").status_code == 401


def test_a_user_cannot_revoke_someone_elses_token(api_as) -> None:
    owner = api_as(Role.VIEWER)
    token_id = owner.post("/tokens", {"name": "mine"}).json_body["id"]
    other = api_as(Role.ADMIN)
    response = other.delete(f"/tokens/{token_id}")
    assert response.status_code == 404
    assert ApiToken.objects.get(pk=token_id).revoked_at is None


def test_token_carries_its_users_role(api_as) -> None:
    viewer = api_as(Role.VIEWER)
    raw = viewer.post("/tokens", {"name": "t"}).json_body["token"]
    bearer = Api(Client(), {"Authorization": f"Bearer {raw}"})
    response = bearer.post("/pools", {"name": "p"})
    assert response.status_code == 403
    assert "admin role" in response.json_body["detail"]


@pytest.mark.parametrize(
    ("role", "status"),
    [(Role.VIEWER, 403), (Role.LABELER, 403), (Role.RESEARCHER, 403), (Role.ADMIN, 201)],
)
def test_pool_writes_need_admin(api_as, role: Role, status: int) -> None:
    assert api_as(role).post("/pools", {"name": f"pool-{role}"}).status_code == status


def test_token_name_is_validated(api_as) -> None:
    response = api_as().post("/tokens", {"name": ""})
    assert response.status_code == 422
    assert response.json_body["errors"][0]["field"] == "name"
