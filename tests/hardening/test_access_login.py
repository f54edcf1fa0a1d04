"""Login throttling (issue 8, part 4): too many failed logins, for one username or from one
address, are a 429 with Retry-After, held in Redis, until the window ends; a successful
login resets the count, and the Django admin's login shares it with the API's."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.conf import settings
from django.test import Client

from studio.models import Role, User
from studio.services.throttle import login_failures_clear

pytestmark = pytest.mark.django_db


@pytest.fixture
def login_limits(settings: Any) -> Any:
    settings.ORCHESTRA_LOGIN_MAX_FAILURES = 3
    settings.ORCHESTRA_LOGIN_MAX_FAILURES_PER_IP = 6
    settings.ORCHESTRA_LOGIN_WINDOW_S = 60
    return settings


def login(client: Client, username: str, password: str) -> Any:
    return client.post("/api/auth/login", {"username": username, "password": password}, "application/json")


def test_repeated_failed_logins_are_throttled_per_username(login_limits: Any, make_user: Callable[..., User]) -> None:
    user = make_user(Role.VIEWER)
    client = Client(REMOTE_ADDR="10.8.0.1")
    for _ in range(3):
        assert login(client, user.username, "wrong").status_code == 401

    refused = login(client, user.username, "pw")  # even the right password: no more guesses
    assert refused.status_code == 429
    assert set(refused.json()) == {"detail"} and "Too many failed logins" in refused.json()["detail"]
    assert 0 < int(refused["Retry-After"]) <= 60
    # Held in Redis, not in this process: another client, address or process sees it too.
    assert login(Client(REMOTE_ADDR="10.8.0.2"), user.username.upper(), "pw").status_code == 429
    keys = redis.Redis.from_url(str(settings.REDIS_URL)).keys(
        f"*{settings.CACHES['default']['KEY_PREFIX']}*login-failures:user:*"
    )
    assert keys
    # Other users are not affected.
    other = make_user(Role.VIEWER)
    assert login(client, other.username, "pw").status_code == 200


def test_a_successful_login_resets_the_count(login_limits: Any, make_user: Callable[..., User]) -> None:
    user = make_user(Role.VIEWER)
    client = Client(REMOTE_ADDR="10.8.1.1")
    for _ in range(2):
        assert login(client, user.username, "wrong").status_code == 401
    assert login(client, user.username, "pw").status_code == 200
    for _ in range(2):
        assert login(client, user.username, "wrong").status_code == 401
    assert login(client, user.username, "pw").status_code == 200


def test_failed_logins_from_one_address_are_throttled(login_limits: Any, make_user: Callable[..., User]) -> None:
    client = Client(REMOTE_ADDR="10.8.2.1")
    for n in range(6):  # a different username each time: the per-username count never trips
        assert login(client, f"nobody-{n}", "guess").status_code == 401
    user = make_user(Role.VIEWER)
    assert login(client, user.username, "pw").status_code == 429
    assert login(Client(REMOTE_ADDR="10.8.2.2"), user.username, "pw").status_code == 200


def test_the_lockout_ends_with_its_window(login_limits: Any, make_user: Callable[..., User]) -> None:
    login_limits.ORCHESTRA_LOGIN_WINDOW_S = 1
    user = make_user(Role.VIEWER)
    client = Client(REMOTE_ADDR="10.8.3.1")
    for _ in range(3):
        assert login(client, user.username, "wrong").status_code == 401
    assert login(client, user.username, "pw").status_code == 429
    time.sleep(1.2)
    assert login(client, user.username, "pw").status_code == 200
    login_failures_clear(username=user.username)


def test_the_django_admin_login_shares_the_count(login_limits: Any, make_user: Callable[..., User]) -> None:
    staff = make_user(Role.ADMIN, is_staff=True, is_superuser=True)
    client = Client(REMOTE_ADDR="10.8.4.1")

    def admin_login(password: str) -> bool:
        client.post("/admin/login/", {"username": staff.username, "password": password, "next": "/admin/"})
        return client.get("/admin/").status_code == 200

    for _ in range(3):
        assert not admin_login("wrong")
    assert login(client, staff.username, "pw").status_code == 429  # the API sees the admin's failures
    assert not admin_login("pw")  # and the admin refuses the right password while locked out
    login_failures_clear(username=staff.username)
    assert admin_login("pw")
