"""Every API route states who may call it: without credentials, all but the public ones are 401."""

from __future__ import annotations

import re

import pytest

from studio.api import api
from studio.models import Role
from tests.conftest import Api

pytestmark = pytest.mark.django_db

PUBLIC = {("get", "/api/health"), ("get", "/api/auth/csrf"), ("post", "/api/auth/login")}


def operations() -> list[tuple[str, str]]:
    schema = api.get_openapi_schema()
    return [(method, path) for path, item in schema["paths"].items() for method in item]


def test_the_public_routes_are_the_only_ones_without_security() -> None:
    schema = api.get_openapi_schema()
    open_routes = {
        (method, path)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if not operation.get("security")
    }
    assert open_routes == PUBLIC


@pytest.mark.parametrize(("method", "path"), [op for op in operations() if op not in PUBLIC])
def test_anonymous_calls_are_401(anonymous_api: Api, method: str, path: str) -> None:
    concrete = re.sub(r"\{[^}]+\}", "1", path).removeprefix("/api")
    response = anonymous_api.call(method, concrete, {} if method in {"post", "patch", "put"} else None)
    assert response.status_code == 401, (method, path, response.content)


ADMIN_PREFIXES = ("/api/pools", "/api/endpoints", "/api/primitives", "/api/admissibility")


@pytest.mark.parametrize(
    ("method", "path"),
    [op for op in operations() if op[0] != "get" and op[1].startswith(ADMIN_PREFIXES)],
)
def test_pool_writes_are_403_below_admin(api_as, method: str, path: str) -> None:
    concrete = re.sub(r"\{[^}]+\}", "1", path).removeprefix("/api")
    response = api_as(Role.RESEARCHER).call(method, concrete, {} if method != "delete" else None)
    assert response.status_code == 403, (method, path, response.content)
