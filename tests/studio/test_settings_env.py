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


def test_bad_values_are_named(monkeypatch) -> None:
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL"):
        redis_settings("http://nope")
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe'"):
        env_bool("DEBUG", False)
