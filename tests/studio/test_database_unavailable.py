"""A database that refuses connections is a 503 with a sentence and Retry-After, never a 500:
the API, /v1 and the admin. The server really refuses: the test points the connection at a
database that does not exist."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import Client

from studio.models import Role
from studio.services.tokens import token_create
from studio.unavailable import MESSAGE
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token() -> str:
    return token_create(user=UserFactory(role=Role.ADMIN), name="down")[1]


@pytest.fixture
def database_refuses() -> Iterator[None]:
    name = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = "orchestra_no_such_database"
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = name


def test_the_api_answers_503_with_a_sentence(token: str, database_refuses: None) -> None:
    response = Client().get("/api/runs", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 503
    assert response.json() == {"detail": MESSAGE}
    assert response["Retry-After"] == "5"


def test_v1_answers_503_in_openais_shape(token: str, database_refuses: None) -> None:
    response = Client().post(
        "/v1/chat/completions", data={"model": "orchestra", "messages": [{"role": "user", "content": "hi"}]},
        content_type="application/json", headers={"Authorization": f"Bearer {token}"},
    )  # fmt: skip
    assert response.status_code == 503
    assert response.json() == {
        "error": {"message": MESSAGE, "type": "service_unavailable", "param": None, "code": "database_unavailable"}
    }
    assert response["Retry-After"] == "5"


def test_other_pages_answer_503_too(database_refuses: None) -> None:
    client = Client()
    client.cookies["sessionid"] = "a-session-the-database-would-look-up"
    response = client.get("/admin/")
    assert response.status_code == 503
    assert response.content.decode() == MESSAGE


def test_health_says_the_database_is_down(database_refuses: None) -> None:
    response = Client().get("/api/health")
    assert response.status_code == 503
    assert response.json()["db"]["ok"] is False
    assert 'database "orchestra_no_such_database" does not exist' in response.json()["db"]["error"]
