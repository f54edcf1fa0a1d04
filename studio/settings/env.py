"""The one place where settings read the environment."""

from __future__ import annotations

import ipaddress
import math
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent
DATA_DIR = Path(os.environ.get("ORCHESTRA_DATA_DIR", BASE_DIR / ".data")).resolve()

# Written by `manage.py up` while it runs the embedded services, so that other
# `manage.py` commands on the same machine reach them without any setup.
SERVICES_FILE = DATA_DIR / "services.env"

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def env_required(name: str, hint: str) -> str:
    value = env_str(name)
    if value is None:
        raise ImproperlyConfigured(f"The environment variable {name} is not set. {hint}")
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use true or false.")


def env_int(name: str, default: int) -> int:
    raw = env_str(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None


def env_float(name: str, default: float) -> float:
    raw = env_str(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if not math.isfinite(value) or value < 0:
        raise ImproperlyConfigured(f"{name}={raw!r} must be a finite number of 0 or more.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = env_str(name)
    if raw is None:
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


def read_services_file() -> dict[str, str]:
    """DATABASE_URL and REDIS_URL of the embedded services, if `up` is running them."""
    if not SERVICES_FILE.exists():
        return {}
    pairs = {}
    for line in SERVICES_FILE.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            pairs[key.strip()] = value.strip()
    return pairs


def channel_host(redis_url: str, *, tcp: bool) -> dict[str, Any]:
    """The channel layer's connection options (a unix socket takes no TCP keepalive)."""
    host: dict[str, Any] = {"address": redis_url, "socket_timeout": None}
    if tcp:
        host["socket_keepalive"] = True
    return host


def celery_redis_url(redis_url: str) -> str:
    """REDIS_URL as Celery spells it: `redis://host:port/db` as is, and a unix socket
    `unix:///path/to/redis.sock?db=N` as `redis+socket:///path/to/redis.sock?virtual_host=N`."""
    parts = urlsplit(redis_url)
    if parts.scheme in {"redis", "rediss"}:
        return redis_url
    if parts.scheme == "unix":
        db = parse_qs(parts.query).get("db", ["0"])[0]
        return f"redis+socket://{parts.path}?virtual_host={db}"
    raise ImproperlyConfigured(f"REDIS_URL must start with redis://, rediss:// or unix://, not {parts.scheme}://.")


# The brokers the studio is set up for, by URL scheme: Redis, or RabbitMQ (AMQP 0-9-1).
BROKER_KINDS = {
    "redis": "redis",
    "rediss": "redis",
    "redis+socket": "redis",
    "amqp": "amqp",
    "amqps": "amqp",
    "pyamqp": "amqp",
}


def broker_kind(broker_url: str) -> str | None:
    """ "redis" or "amqp" for a Celery broker URL; None for a scheme the studio is not set up for
    (the start check, studio.queues.broker_problem, refuses it with one line)."""
    return BROKER_KINDS.get(urlsplit(broker_url).scheme)


def broker_transport_options(kind: str | None, *, visibility_timeout: int) -> dict[str, Any]:
    """Celery's `broker_transport_options` for the kind of broker.

    - Redis keeps a message a worker took, unacknowledged, aside for `visibility_timeout`
      seconds, then delivers it again: that is how a dead worker's task (acks_late) comes back.
    - RabbitMQ delivers a dead worker's unacknowledged messages again as soon as its connection
      closes, and has no visibility timeout. Publisher confirms make a send return only once
      RabbitMQ holds the message, so a message is not lost in a broker that stops right after.
    """
    if kind == "amqp":
        return {"confirm_publish": True}
    if kind == "redis":
        return {"visibility_timeout": visibility_timeout}
    return {}


def redis_settings(redis_url: str, broker_url: str | None = None) -> dict[str, Any]:
    """Derive the Celery, channel-layer and cache settings from one REDIS_URL.

    `redis://host:port/db` and `unix:///path/to/redis.sock?db=N` are both accepted;
    Celery spells a unix socket `redis+socket://`. Celery's broker is this Redis unless
    `broker_url` (CELERY_BROKER_URL) names another; its results stay in Redis.
    """
    parts = urlsplit(redis_url)
    celery_url = celery_redis_url(redis_url)
    return {
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker_url or celery_url,
        "CELERY_RESULT_BACKEND": celery_url,
        "CHANNEL_LAYERS": {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                # A consumer waits on BZPOPMIN for 5 s at a time (channels_redis's brpop_timeout), and
                # redis-py 8 reads with a 5 s socket timeout by default: an event loop a moment late
                # timed the empty reply out and the WebSocket closed. With any read timeout, a consumer
                # cancelled mid-read now and then kept reading (3 of 8 runs of the WebSocket access
                # tests hung at 30 s), so reads have none: Redis answers a blocking pop within 5 s, and
                # a connection it drops fails the read at once. TCP keepalive finds a silent peer.
                "CONFIG": {
                    "hosts": [channel_host(redis_url, tcp=parts.scheme != "unix")],
                    "prefix": "orchestra",
                },
            }
        },
        "CACHES": {
            "default": {
                "BACKEND": "studio.cache.RedisCache",
                "LOCATION": redis_url,
                "KEY_PREFIX": "orchestra",
            }
        },
    }


def metrics_networks(value: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """ORCHESTRA_METRICS_ALLOW's addresses and networks; a bad one stops the settings, named."""
    networks = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"ORCHESTRA_METRICS_ALLOW: {part!r} is not an address or a network") from None
    return tuple(networks)
