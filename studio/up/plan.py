"""What `manage.py up` runs, from its options (`plan_check`), and the addresses it serves on."""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError

from studio.queues import QUEUES

ROLES = ("all", "web", "worker", "model")
MODEL_PORT = 8001  # `--role model`'s default port, where ORCHESTRA_LOCAL_MODEL_PORT is 0


@dataclass(frozen=True)
class Plan:
    """What this `up` runs, from its options (see `plan_check`)."""

    role: str  # all, web, worker or model
    host: str  # where the web server listens (web and all), or the model server (model)
    port: int
    concurrency: int  # Celery worker processes (worker and all)
    queues: tuple[str, ...]  # the Celery queues the worker serves

    @property
    def web(self) -> bool:
        return self.role in ("all", "web")

    @property
    def worker(self) -> bool:
        return self.role in ("all", "worker")

    @property
    def processes(self) -> int:
        """Processes that may hold database connections: the web server, the worker's parent
        and its pool processes."""
        return (1 if self.web else 0) + (1 + self.concurrency if self.worker else 0)

    @property
    def worker_name(self) -> str:
        """The worker's node name: `orchestra@<host>` on every queue, else named after its
        queues, so two workers of one host (one per queue, say) do not share a name."""
        prefix = "orchestra" if set(self.queues) == set(QUEUES) else "-".join(("orchestra", *self.queues))
        return f"{prefix}@{socket.gethostname()}"


def plan_check(options: dict[str, Any]) -> Plan:
    """The plan of `up`'s options; CommandError (one line) for a value that makes no sense."""
    role = options.get("role") or "all"
    if role not in ROLES:
        raise CommandError(f"--role {role!r}: choose all, web, worker or model.")
    if options.get("queues") is not None and role in ("web", "model"):
        raise CommandError(f"--queues: a {role} host runs no worker; use it with --role worker or --role all.")
    if role == "worker" and (options.get("host") is not None or options.get("port") is not None):
        raise CommandError("--host/--port: a worker host serves no HTTP; leave them out with --role worker.")
    if role in ("web", "model") and options.get("concurrency") is not None:
        raise CommandError(f"--concurrency: a {role} host runs no worker; use it with --role worker or --role all.")
    queues: tuple[str, ...] = QUEUES
    if options.get("queues") is not None:
        named = [name.strip() for name in str(options["queues"]).split(",") if name.strip()]
        unknown = sorted(set(named) - set(QUEUES))
        if unknown or not named:
            what = f"unknown queue {', '.join(map(repr, unknown))}" if unknown else "no queue named"
            raise CommandError(f"--queues: {what}; choose from {','.join(QUEUES)}.")
        queues = tuple(name for name in QUEUES if name in named)
    concurrency = 2 if options.get("concurrency") is None else int(options["concurrency"])
    if concurrency < 1:
        raise CommandError(f"--concurrency {concurrency}: a worker needs at least 1 process.")
    port = options.get("port")
    if port is None and role == "model":
        port = settings.ORCHESTRA_LOCAL_MODEL_PORT or MODEL_PORT
    if port is None:
        raw = os.environ.get("ORCHESTRA_PORT") or "8000"
        if not raw.isdigit():
            raise CommandError(f"ORCHESTRA_PORT={raw!r} is not a port number.")
        port = int(raw)
    host = options.get("host") or os.environ.get("ORCHESTRA_HOST", "127.0.0.1")
    return Plan(role=role, host=host, port=port, concurrency=concurrency, queues=queues)


def loopback(host: str) -> bool:
    """Whether `host` is reached from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def debug_check(host: str) -> None:
    """Refuse to serve Django's debug pages (the URL patterns, the settings) beyond this machine."""
    if settings.DEBUG and not loopback(host):
        raise CommandError(
            f"--host {host}: DEBUG is on (the default of studio.settings.dev), so an error or an unknown path "
            "would show Django's debug page, with the URL patterns and settings, to anyone who reaches the port. "
            "To serve beyond this machine set DEBUG=false and ALLOWED_HOSTS to the names clients use, or use "
            "DJANGO_SETTINGS_MODULE=studio.settings.production (docs/deploy.md)."
        )


def http_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def probe_url(host: str, port: int) -> str:
    """Where `up` asks for /api/health: a wildcard address is reached on loopback."""
    local = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)  # noqa: S104
    return f"{http_url(local, port)}api/health"
