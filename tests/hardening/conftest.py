"""Fixtures for the hardening tests: an admin with an API token, and a pool a run may use."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from studio.models import ModelPool, Role, User
from studio.services.tokens import token_create
from tests.factories import AdmissibilityFactory, UserFactory


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
