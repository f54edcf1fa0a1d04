from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from studio.settings.env import broker_kind, broker_transport_options, celery_redis_url, env_bool, redis_settings


def test_tcp_redis_url_is_used_as_is() -> None:
    derived = redis_settings("redis://127.0.0.1:6379/2")
    assert derived["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/2"
    assert derived["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"][0]["address"] == "redis://127.0.0.1:6379/2"


def test_unix_socket_becomes_celerys_spelling() -> None:
    derived = redis_settings("unix:///srv/redis.sock?db=3")
    assert derived["CELERY_BROKER_URL"] == "redis+socket:///srv/redis.sock?virtual_host=3"
    assert derived["CACHES"]["default"]["LOCATION"] == "unix:///srv/redis.sock?db=3"


@pytest.mark.parametrize("url", ["redis://127.0.0.1:1/0", "unix:///nonexistent/redis.sock?db=0"])
def test_the_channel_layers_options_suit_its_connection(url: str) -> None:
    """Each option is one its kind of connection takes (a unix socket has no TCP keepalive):
    connecting fails on the missing server, not on the options."""
    import asyncio

    from channels_redis.utils import create_pool
    from redis.exceptions import ConnectionError

    (host,) = redis_settings(url)["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"]
    assert host["socket_timeout"] is None

    async def ping() -> None:
        from redis.asyncio import Redis

        client = Redis(connection_pool=create_pool(dict(host)))
        try:
            await client.ping()
        finally:
            await client.aclose()

    with pytest.raises(ConnectionError):
        asyncio.run(ping())


def test_bad_values_are_named(monkeypatch) -> None:
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL"):
        redis_settings("http://nope")
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe'"):
        env_bool("DEBUG", False)


def test_celery_broker_url_moves_only_the_broker() -> None:
    """RabbitMQ as the broker: Celery's results, the channel layer and the cache stay in Redis."""
    derived = redis_settings("redis://127.0.0.1:6379/2", "amqp://guest:guest@10.0.0.30:5672//")
    assert derived["CELERY_BROKER_URL"] == "amqp://guest:guest@10.0.0.30:5672//"
    assert derived["CELERY_RESULT_BACKEND"] == "redis://127.0.0.1:6379/2"
    assert derived["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"][0]["address"] == "redis://127.0.0.1:6379/2"
    assert derived["CACHES"]["default"]["LOCATION"] == "redis://127.0.0.1:6379/2"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("redis://h:6379/0", "redis"),
        ("rediss://h:6380/0", "redis"),
        ("redis+socket:///run/redis.sock?virtual_host=0", "redis"),
        ("amqp://u:p@h:5672//", "amqp"),
        ("amqps://u:p@h:5671/orchestra", "amqp"),
        ("pyamqp://u:p@h//", "amqp"),
        ("sqs://", None),
        ("h:5672", None),
    ],
)
def test_broker_kinds(url: str, kind: str | None) -> None:
    assert broker_kind(url) == kind


def test_each_broker_gets_its_own_transport_options() -> None:
    assert broker_transport_options("redis", visibility_timeout=42) == {"visibility_timeout": 42}
    # RabbitMQ has no visibility timeout (it redelivers when a worker's connection closes);
    # publisher confirms make a send wait until RabbitMQ holds the message.
    assert broker_transport_options("amqp", visibility_timeout=42) == {"confirm_publish": True}


@pytest.mark.parametrize(
    ("broker", "options", "stale_s"),
    [
        # Redis redelivers after the visibility timeout: a running attempt is stale after the smaller of the two.
        ("", {"visibility_timeout": 120}, 120),
        # RabbitMQ redelivers at once, maybe while the first delivery still runs: only the time limit bounds it.
        ("amqp://guest:guest@10.0.0.30:5672//", {"confirm_publish": True}, 600),
    ],
)
def test_the_settings_follow_the_broker(broker: str, options: dict[str, object], stale_s: int) -> None:
    env = {name: value for name, value in os.environ.items() if name != "ORCHESTRA_ATTEMPT_STALE_S"}
    env.update(DJANGO_SETTINGS_MODULE="studio.settings.test", CELERY_BROKER_URL=broker, CELERY_VISIBILITY_TIMEOUT="120")
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.CELERY_BROKER_URL, s.CELERY_RESULT_BACKEND, s.CELERY_BROKER_TRANSPORT_OPTIONS, "
        "s.ORCHESTRA_ATTEMPT_STALE_S]))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    url, results, transport, stale = json.loads(out)
    redis = celery_redis_url(env["REDIS_URL"])  # a unix socket is spelled redis+socket:// for Celery
    assert url == (broker or redis) and results == redis
    assert transport == options and stale == stale_s
