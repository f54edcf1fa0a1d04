"""GET /api/users: every user by name, for filters by owner; researchers and admins only."""

from __future__ import annotations

import pytest

from studio.models import Role

pytestmark = pytest.mark.django_db


def test_a_researcher_lists_every_user_by_name_page_after_page(api_as, make_user) -> None:
    for name in ("carol", "alice", "bob"):
        make_user(Role.VIEWER, username=name)
    inactive = make_user(Role.LABELER, username="dora", is_active=False)  # owner of old runs: still listed
    researcher = make_user(Role.RESEARCHER, username="erin")
    api = api_as(user=researcher)
    first = api.get("/users", limit=2).json_body
    assert first["count"] == 5
    assert [u["username"] for u in first["items"]] == ["alice", "bob"]
    rest = api.get("/users", limit=2, offset=2).json_body["items"]
    assert [(u["username"], u["role"]) for u in rest] == [("carol", "viewer"), ("dora", "labeler")]
    assert rest[1]["id"] == inactive.pk
    assert set(first["items"][0]) == {"id", "username", "role"}  # nothing else about them


def test_users_of_one_role(api_as, make_user) -> None:
    make_user(Role.LABELER, username="lab")
    body = api_as(Role.ADMIN).get("/users", role="labeler").json_body
    assert [u["username"] for u in body["items"]] == ["lab"]
    bad = api_as(Role.ADMIN).get("/users", role="owner")
    assert bad.status_code == 422
    assert bad.json_body["errors"][0]["field"] == "role"


@pytest.mark.parametrize("role", [Role.VIEWER, Role.LABELER])
def test_viewers_and_labelers_may_not_list_users(api_as, role: Role) -> None:
    response = api_as(role).get("/users")
    assert response.status_code == 403
    assert "researcher role" in response.json_body["detail"]


def test_strangers_may_not_list_users(anonymous_api) -> None:
    assert anonymous_api.get("/users").status_code == 401
