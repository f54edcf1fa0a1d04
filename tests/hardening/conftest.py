"""Fixtures for the hardening tests: an admin with an API token, a pool a run may use, a task
of the admin's, and the world an access case runs in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from studio.models import ModelPool, Role, Task, User
from studio.services.tokens import token_create
from tests.factories import AdmissibilityFactory, TaskFactory, UserFactory
from tests.hardening.access_world import World, build_world


@dataclass
class TokenUser:
    user: User
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def admin_token(db: None) -> TokenUser:
    """An admin, who may call every /api/ route, and a bearer token of theirs (no CSRF needed)."""
    user = UserFactory(role=Role.ADMIN)
    return TokenUser(user=user, token=token_create(user=user, name="hardening")[1])


@pytest.fixture
def usable_pool(db: None) -> ModelPool:
    """A pool with one enabled endpoint and one admissible (model, primitive) pair."""
    return AdmissibilityFactory().endpoint.pool


@pytest.fixture
def task(admin_token: TokenUser) -> Task:
    return TaskFactory(owner=admin_token.user)


@pytest.fixture
def world(settings: Any, tmp_path: Path) -> Callable[[Role | None], World]:
    settings.DATA_DIR = tmp_path  # where the checkpoint's file is
    return lambda role: build_world(role, tmp_path)
