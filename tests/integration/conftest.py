"""A real Celery worker (threads) on the real Redis broker, for end-to-end runs; the studio
on uvicorn (as in production) in a thread; a user with an API token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from studio.models import User
from studio.services.tokens import token_create
from tests.factories import UserFactory
from tests.support.asgi import asgi_server as live_asgi_server
from tests.support.worker import running_worker


@pytest.fixture
def celery_worker() -> Iterator[object]:
    with running_worker(concurrency=8) as worker:
        yield worker


@pytest.fixture
def asgi_server() -> Iterator[str]:
    """studio.asgi on uvicorn in a thread; yields its base URL."""
    with live_asgi_server() as url:
        yield url


@pytest.fixture
def user_token(db: None) -> tuple[User, str]:
    user = UserFactory()
    return user, token_create(user=user, name="openai")[1]
