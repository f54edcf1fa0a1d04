"""Fixtures for the studio tests: a researcher and a labeler (the preference tests)."""

from __future__ import annotations

import pytest

from studio.models import Role, User
from tests.factories import UserFactory


@pytest.fixture
def researcher() -> User:
    return UserFactory(role=Role.RESEARCHER)


@pytest.fixture
def labeler() -> User:
    return UserFactory(role=Role.LABELER)
