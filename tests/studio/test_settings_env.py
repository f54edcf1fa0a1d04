from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from studio.settings.env import env_bool, redis_settings


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
