"""Shared set-up of the bench scripts: services, Django, Celery workers, and cleanup.

    with bench_environment() as env:
        worker = env.start_worker("w1", pool="threads", concurrency=8)
        env.wait_workers_ready([worker])
        ...

`bench_environment` starts embedded PostgreSQL and Redis under .data/bench, or the folder
BENCH_DATA_DIR names (only for whichever of DATABASE_URL / REDIS_URL is unset), sets Django up (studio.settings.dev with
DEBUG off, so no query log), migrates and seeds the primitives. On exit it kills every
worker it started, then stops the embedded services. SIGTERM becomes SystemExit, so a
killed bench cleans up too; its workers also get SIGTERM if the bench dies (PDEATHSIG).

`bench_environment(broker=URL)` (a bench's `--broker`, default CELERY_BROKER_URL) puts
Celery's broker there, e.g. RabbitMQ at amqp://guest:guest@127.0.0.1:5672//; Redis still
carries the channel layer, the results and the cache. A broker that does not answer stops
the bench at once, with one line.

The workers run `bench.celery_app`: the studio's Celery app plus bench-only settings and
probes read from the environment (see that module).

Measuring (load, commit, percentiles, CPU meters) is in bench/measure.py, and the replayed
workload (the replay pool, composite tasks, waiting for runs) in bench/workload.py; this
module re-exports their names, which the bench scripts import from here. The child processes
(`Worker`, `start_server`, `free_port`) are in bench/processes.py, and ROOT and DATA_DIR in
bench/paths.py; the bench scripts import those from there.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

from bench.measure import CpuMeter, code_version, load_average, percentile, process_tree, verdict
from bench.paths import DATA_DIR, ROOT
from bench.processes import Worker
from bench.workload import (
    REPLAY_POOL,
    REPLAY_SOURCE,
    TERMINAL,
    bench_user,
    composite_tasks,
    forget_pool,
    replay_pool,
    wait_runs,
)

__all__ = [
    "REPLAY_POOL",
    "REPLAY_SOURCE",
    "add_broker_argument",
    "TERMINAL",
    "BenchEnvironment",
    "CpuMeter",
    "bench_environment",
    "bench_user",
    "code_version",
    "composite_tasks",
    "forget_pool",
    "load_average",
    "percentile",
    "process_tree",
    "replay_pool",
    "verdict",
    "wait_runs",
]


@dataclass
class BenchEnvironment:
    """What `bench_environment` set up; `env` is what child processes get."""

    env: dict[str, str]
    embedded_redis: bool
    postgres_pid: int | None
    redis_pid: int | None
    workers: list[Worker] = field(default_factory=list)
    services: Any = None  # studio.embedded.EmbeddedServices: what restart_redis / restart_postgres restart
    broker_url: str = ""  # Celery's broker: CELERY_BROKER_URL, or "" for REDIS_URL's Redis
    broker_kind: str = "redis"  # or "amqp" (RabbitMQ)

    def describe_broker(self) -> str:
        from kombu.utils.url import maybe_sanitize_url

        if self.broker_kind == "amqp":
            return f"RabbitMQ at {maybe_sanitize_url(self.broker_url)} (Redis: channel layer, results, cache)"
        return "Redis (REDIS_URL's: broker, channel layer, results, cache)"

    def child_env(self, **extra: str) -> dict[str, str]:
        return {**self.env, **extra}

    def start_worker(
        self,
        name: str,
        *,
        pool: str,
        concurrency: int,
        queues: str = "orchestrator,workers",
        env: dict[str, str] | None = None,
    ) -> Worker:
        worker = Worker(
            name=name,
            pool=pool,
            concurrency=concurrency,
            queues=queues,
            env=self.child_env(**(env or {})),
            log_path=DATA_DIR / "logs" / f"{name}.log",
        )
        worker.start()
        self.workers.append(worker)
        return worker

    def wait_workers_ready(self, workers: list[Worker], timeout_s: float = 120.0) -> float:
        """Block until every worker answers a broadcast ping; return the seconds it took."""
        from workers.celery import app

        started = time.monotonic()
        wanted = {f"{worker.name}@" for worker in workers}
        while time.monotonic() - started < timeout_s:
            dead = [worker.name for worker in workers if not worker.running]
            if dead:
                raise RuntimeError(f"worker {dead[0]} exited; see {DATA_DIR / 'logs'}")
            replies = app.control.ping(timeout=0.5) or []
            names = {name.split("@")[0] + "@" for reply in replies for name in reply}
            if wanted <= names:
                return time.monotonic() - started
        raise RuntimeError(f"workers not ready after {timeout_s:.0f} s; see {DATA_DIR / 'logs'}")

    def stop_workers(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers.clear()

    def queued_messages(self) -> int:
        """Messages waiting in the Celery queues (not those a worker has taken)."""
        import redis

        from workers.celery import QUEUES, app

        if self.broker_kind == "amqp":
            total = 0
            with app.connection_for_write() as connection:
                for queue in QUEUES:
                    # A queue not declared yet holds nothing, and fails the passive declare (and its channel).
                    with connection.channel() as channel, contextlib.suppress(Exception):
                        total += channel.queue_declare(queue=queue, passive=True).message_count  # type: ignore[attr-defined]
            return total
        client = redis.Redis.from_url(self.env["REDIS_URL"])
        # kombu keeps a queue in a Redis list named after it (priority lists get a suffix).
        keys = [key for queue in QUEUES for key in client.keys(f"{queue}*")]
        return int(sum(client.llen(key) for key in keys if client.type(key) == b"list"))

    def restart_redis(self, down_s: float) -> None:
        """Stop the embedded Redis (SIGTERM: it writes its dump, so queued and unacknowledged
        messages survive), leave it down `down_s` seconds, start it again on the same socket
        and data folder."""
        from studio import embedded

        if self.services is None or self.services.redis is None:
            raise RuntimeError("Redis is not embedded (REDIS_URL is set): the bench will not restart it")
        embedded.stop_redis(self.services.redis)
        self.services.redis = None
        time.sleep(down_s)
        self.services.redis, url = embedded.start_redis(DATA_DIR / "redis")
        assert url == self.env["REDIS_URL"], (url, self.env["REDIS_URL"])
        self.redis_pid = self.services.redis.pid
        from workers.celery import app

        # This process's pooled broker connection (its pings) went with the old server; the
        # first ping on it fails, and reconnects.
        for _ in range(5):
            try:
                app.control.ping(timeout=0.2)
                break
            except Exception:  # noqa: S112 - any failure here is the dead connection being noticed
                continue

    def restart_rabbitmq(self, down_s: float) -> None:
        """Stop the RabbitMQ broker of this machine (`rabbitmqctl stop_app`: every connection
        drops, durable queues and persistent messages stay on disk, a dead consumer's
        unacknowledged messages go back to their queue), leave it down `down_s` seconds, start
        it again, and wait until it takes connections. Only a RabbitMQ on this machine."""
        from studio.queues import broker_problem

        host = urlsplit(self.broker_url).hostname or ""
        control = shutil.which("rabbitmqctl")
        if self.broker_kind != "amqp" or host not in {"127.0.0.1", "localhost", "::1"} or control is None:
            raise RuntimeError(
                "restarting RabbitMQ needs --broker amqp://...@127.0.0.1 and rabbitmqctl on this machine"
            )
        subprocess.run([control, "stop_app"], check=True, capture_output=True, timeout=120)
        time.sleep(down_s)
        subprocess.run([control, "start_app"], check=True, capture_output=True, timeout=120)
        deadline = time.monotonic() + 60
        while broker_problem(self.broker_url, timeout_s=2) is not None:
            if time.monotonic() > deadline:
                raise RuntimeError("RabbitMQ did not take connections within 60 s of start_app")
            time.sleep(0.2)
        _forget_broker_connections()

    def restart_postgres(self, down_s: float) -> None:
        """Stop the embedded PostgreSQL (`pg_ctl stop -m fast`: sessions are cut, open
        transactions rolled back), leave it down `down_s` seconds, start it again on the same
        data folder and socket."""
        from pgserver._commands import pg_ctl

        server = self.services.postgres if self.services is not None else None
        if server is None:
            raise RuntimeError("PostgreSQL is not embedded (DATABASE_URL is set): the bench will not restart it")
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)
        time.sleep(down_s)
        with server._lock:
            server.ensure_postgres_running()  # same socket folder; refreshes the postmaster it stops on exit
        self.postgres_pid = server.get_pid()

    def purge_queues(self) -> None:
        """Drop queued Celery messages (also unacknowledged ones) left by an earlier bench: the
        embedded Redis is emptied; a broker of your own (RabbitMQ, or REDIS_URL's Redis) has
        only the studio's queues purged."""
        if self.embedded_redis:
            import redis

            redis.Redis.from_url(self.env["REDIS_URL"]).flushdb()
        if self.broker_kind == "amqp" or not self.embedded_redis:
            from workers.celery import app

            with app.connection_for_write() as connection:  # a new one: a pooled one may predate a restart
                app.control.purge(connection=connection)


def _forget_broker_connections() -> None:
    """Drop this process's pooled broker connections (the app's, its producers' and remote
    control's, kombu's registry): after RabbitMQ restarts each is a dead socket that would
    fail its next use. Celery's own reset after a fork does the same."""
    from kombu import pools

    from workers.celery import app

    pools.reset()
    app._after_fork()  # type: ignore[attr-defined]
    with contextlib.suppress(AttributeError, KeyError):
        app.control._after_fork()  # type: ignore[attr-defined]


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _configure_environ() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "studio.settings.dev"
    os.environ.setdefault("ORCHESTRA_DATA_DIR", str(DATA_DIR))
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def add_broker_argument(parser: argparse.ArgumentParser) -> None:
    """`--broker URL`: Celery's broker for the bench and its workers (default: CELERY_BROKER_URL,
    else REDIS_URL's Redis), e.g. amqp://guest:guest@127.0.0.1:5672// for RabbitMQ."""
    parser.add_argument(
        "--broker",
        default=os.environ.get("CELERY_BROKER_URL") or None,
        help="Celery broker URL, e.g. amqp://guest:guest@127.0.0.1:5672// (default: CELERY_BROKER_URL, else Redis)",
    )


@contextlib.contextmanager
def bench_environment(broker: str | None = None) -> Iterator[BenchEnvironment]:
    """Services, Django and migrations; everything started is stopped on exit. `broker`:
    Celery's broker (CELERY_BROKER_URL) instead of REDIS_URL's Redis."""
    _configure_environ()
    from studio import embedded
    from studio.queues import broker_problem_in
    from studio.settings.env import broker_kind

    if broker:
        os.environ["CELERY_BROKER_URL"] = broker
    previous = signal.signal(signal.SIGTERM, _raise_exit)
    services = embedded.start_missing(DATA_DIR)
    bench: BenchEnvironment | None = None
    try:
        os.environ.update(services.env)
        problem = broker_problem_in(os.environ)
        if problem is not None:
            raise SystemExit(problem)
        import django

        django.setup()
        from django.core.management import call_command

        from studio.services.bootstrap import primitives_seed

        call_command("migrate", verbosity=0, interactive=False)
        primitives_seed()
        bench = BenchEnvironment(
            env=dict(os.environ),
            embedded_redis=services.redis is not None,
            postgres_pid=services.postgres.get_pid() if services.postgres is not None else None,
            redis_pid=services.redis.pid if services.redis is not None else None,
            services=services,
            broker_url=os.environ.get("CELERY_BROKER_URL", ""),
            # broker_problem_in refused any scheme broker_kind does not know.
            broker_kind=broker_kind(os.environ.get("CELERY_BROKER_URL") or "redis://") or "redis",
        )
        bench.purge_queues()
        yield bench
    finally:
        if bench is not None:
            bench.stop_workers()
        from django.db import connections

        connections.close_all()
        services.stop()
        signal.signal(signal.SIGTERM, previous)
