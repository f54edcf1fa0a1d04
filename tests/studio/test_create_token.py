"""`manage.py create_token`: the first API token without the admin or three requests."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from studio.services.tokens import token_user
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_it_prints_a_working_token_and_only_that() -> None:
    user = UserFactory(username="admin")
    out, err = StringIO(), StringIO()
    call_command("create_token", stdout=out, stderr=err)
    raw = out.getvalue().strip()
    assert "\n" not in raw and token_user(raw=raw) == user
    assert "shown this once" in err.getvalue() and raw not in err.getvalue()
    response = Client().get("/api/tokens", headers={"Authorization": f"Bearer {raw}"})
    assert response.status_code == 200 and [t["name"] for t in response.json()["items"]] == ["cli"]


def test_an_unknown_user_is_one_line() -> None:
    with pytest.raises(CommandError, match="There is no user 'nobody'."):
        call_command("create_token", "--user", "nobody", stdout=StringIO(), stderr=StringIO())
