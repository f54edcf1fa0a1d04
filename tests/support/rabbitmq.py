"""RabbitMQ for the tests that run Celery on it, the studio's other broker.

RABBITMQ_URL names the server. When it is set, the server must answer: a test that needs it
fails otherwise (CI sets it where RabbitMQ runs, .ci/run). When it is unset, the tests try
RabbitMQ's default address, and skip, saying so, where nothing answers there: unlike
PostgreSQL and Redis, RabbitMQ has no embedded fallback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

from studio.queues import broker_problem
from studio.settings.env import broker_transport_options

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672//"


def rabbitmq_url() -> str:
    """The RabbitMQ to use; skips the test (or fails it, with RABBITMQ_URL set) when it does not answer."""
    url = os.environ.get("RABBITMQ_URL") or DEFAULT_URL
    problem = broker_problem(url, timeout_s=3)
    if problem is None:
        return url
    if os.environ.get("RABBITMQ_URL"):
        pytest.fail(f"RABBITMQ_URL is set but RabbitMQ does not answer: {problem}")
    pytest.skip(f"no RabbitMQ at {DEFAULT_URL} (set RABBITMQ_URL to require one): {problem}")


def _drop_pooled_connections(app: Any) -> None:
    """Forget every pooled broker connection and producer (the app's, the remote control's and
    kombu's registry, which a stopped worker may leave closed), so the next send or ping
    connects to the broker the configuration names now: Celery's own reset after a fork."""
    from kombu import pools

    if app._pool is not None:
        app._pool.force_close_all()
    pools.reset()
    app._after_fork()
    with suppress(AttributeError, KeyError):
        app.control._after_fork()  # the mailbox's cached producer pool


@contextmanager
def celery_on(url: str) -> Iterator[None]:
    """The studio's Celery app (workers and senders in this process) on the broker at `url`
    while the block runs, with that broker's transport options; Redis again afterwards.
    Celery reads CELERY_BROKER_URL from the environment before its settings."""
    from workers.celery import app

    before_url = os.environ.get("CELERY_BROKER_URL")
    before_options = app.conf.broker_transport_options
    _drop_pooled_connections(app)
    os.environ["CELERY_BROKER_URL"] = url
    app.conf.broker_transport_options = broker_transport_options("amqp", visibility_timeout=3600)
    try:
        yield
    finally:
        _drop_pooled_connections(app)
        app.conf.broker_transport_options = before_options
        if before_url is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = before_url
