"""The studio's Celery app for bench workers, with bench-only settings and probes.

    python -m celery -A bench.celery_app worker -Q orchestrator,workers ...

Read from the environment (all optional; without them this is `workers.celery.app` as is):

- BENCH_VISIBILITY_TIMEOUT=N: the Redis transport redelivers a message left unacknowledged
  (its worker died) after N seconds, and looks for such messages every second. The studio's
  settings set only the visibility timeout (CELERY_VISIBILITY_TIMEOUT, default one hour), not
  how often Redis looks. Ignored with RabbitMQ as the broker (CELERY_BROKER_URL=amqp://...),
  which redelivers such messages as soon as the worker's connection closes.
- BENCH_PROFILE=PATH: after each task, append one JSON line to PATH: the task's wall and
  CPU time, its SQL statements (count and time, split into run-row locks, event appends and
  the rest), the channel-layer notifications, the Celery publishes, the provider call, and
  the main steps of the engine and of an attempt (inclusive).
- BENCH_DB_REUSE_MAX=N: Celery's Django fixup keeps database connections for N tasks
  (`CELERY_DB_REUSE_MAX`); by default it closes them before and after every task, so each
  task opens a new PostgreSQL session. The studio's settings do not set it.
- BENCH_CALL_LOG=PATH: append `call <attempt id> <pid> <unix time>` to PATH as each provider
  call starts, so a bench can count calls per attempt (a call cut short by a crash counts),
  and `published <attempt id> ...` when a worker has sent an attempt to the broker.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from workers.celery import app

__all__ = ["app"]

_stats = threading.local()


def _counters() -> dict[str, float]:
    counters: dict[str, float] | None = getattr(_stats, "counters", None)
    if counters is None:
        counters = _stats.counters = {}
    return counters


def _add(name: str, seconds: float, cpu_s: float | None = None) -> None:
    counters = _counters()
    counters[f"{name}_n"] = counters.get(f"{name}_n", 0) + 1
    counters[f"{name}_s"] = counters.get(f"{name}_s", 0.0) + seconds
    if cpu_s is not None:
        counters[f"{name}_cpu"] = counters.get(f"{name}_cpu", 0.0) + cpu_s


def _sql_kind(sql: str) -> str:
    head = sql.lstrip()[:200]
    if "studio_runevent" in head and head.startswith("INSERT"):
        return "event_insert"
    if head.startswith('UPDATE "studio_run" SET "last_seq"') or head.startswith('SELECT "studio_run"."last_seq"'):
        return "event_seq"
    if head.startswith('UPDATE "studio_run"'):
        return "run_update"  # totals: waits for the run's row lock like the seq bump
    tail = sql.rstrip()
    if tail.endswith('FOR UPDATE OF "studio_run"'):
        return "run_lock"  # run_step waits here while another step of the run holds the lock
    if tail.endswith('FOR UPDATE OF "studio_attempt"'):
        return "attempt_lock"
    return "other"


def _count_sql(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    started, cpu = time.perf_counter(), time.process_time()
    try:
        return execute(sql, params, many, context)
    finally:
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        _add("sql", wall, cpu)
        _add(f"sql_{_sql_kind(sql)}", wall, cpu)


def _timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """Wall time, and CPU time of the whole process (exact for the prefork pool, where a
    process runs one task at a time; threads of the same process blur it)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            _add(name, time.perf_counter() - started, time.process_time() - cpu)

    return wrapper


def _install_profile(path: str) -> None:
    from celery import signals
    from django.db.backends.signals import connection_created

    import orchestrator.core as core
    import studio.services.attempts as attempts
    import studio.services.events as events
    import studio.services.live_shell as shell
    import workers.execution as execution

    def on_connection(sender: Any, connection: Any, **kwargs: Any) -> None:
        _add("connect", 0.0)
        # A thread's connection object is reused when it reconnects: count each statement once.
        if _count_sql not in connection.execute_wrappers:
            connection.execute_wrappers.append(_count_sql)

    connection_created.connect(on_connection, weak=False)
    events._notify = _timed("notify", events._notify)
    execution.execute = _timed("provider", execution.execute)
    # Modules call these by their global names, so replacing the module attribute times every call.
    for module, names in (
        (shell, ("_load", "_policy", "admissible_pairs", "_write", "_write_nodes", "_write_attempts")),
        (shell, ("run_events_append",)),
        (core, ("step",)),  # the live shell calls core.step by the module's attribute
        (attempts, ("run_events_append",)),
        (execution, ("attempts_start", "attempts_finish")),  # imported there by name
    ):
        for name in names:
            setattr(module, name, _timed(name, getattr(module, name)))

    def before_publish(**kwargs: Any) -> None:
        _stats.publish_started = time.perf_counter(), time.process_time()

    def after_publish(**kwargs: Any) -> None:
        wall, cpu = getattr(_stats, "publish_started", (time.perf_counter(), time.process_time()))
        _add("publish", time.perf_counter() - wall, time.process_time() - cpu)

    def prerun(task: Any = None, **kwargs: Any) -> None:
        _stats.counters = {}
        _stats.task_started = time.perf_counter(), time.process_time()

    def postrun(task: Any = None, **kwargs: Any) -> None:
        wall, cpu = getattr(_stats, "task_started", (time.perf_counter(), time.process_time()))
        record = {
            "task": task.name if task is not None else "?",
            "pid": os.getpid(),
            "wall_s": time.perf_counter() - wall,
            "wall_cpu": time.process_time() - cpu,
            **_counters(),
        }
        with open(path, "a") as log:  # one short write per line: O_APPEND keeps lines whole
            log.write(json.dumps(record) + "\n")

    signals.before_task_publish.connect(before_publish, weak=False)
    signals.after_task_publish.connect(after_publish, weak=False)
    signals.task_prerun.connect(prerun, weak=False)
    signals.task_postrun.connect(postrun, weak=False)


def _log_line(path: str, what: str, attempt_id: Any) -> None:
    with open(path, "a") as log:  # one short write per line: O_APPEND keeps lines whole
        log.write(f"{what} {attempt_id} {os.getpid()} {time.time():.6f}\n")


def _install_call_log(path: str) -> None:
    from celery import signals

    import workers.execution as execution

    execute = execution.execute

    def logged(work: Any) -> Any:
        _log_line(path, "call", work.attempt_id)
        return execute(work)

    def published(sender: Any = None, body: Any = None, **kwargs: Any) -> None:
        if sender == "workers.execute_attempts" and body:
            for attempt_id in body[0][0]:  # protocol 2 body: (args, kwargs, embed); args: (ids,)
                _log_line(path, "published", attempt_id)

    execution.execute = logged
    signals.after_task_publish.connect(published, weak=False)


def _configure() -> None:
    from studio.settings.env import broker_kind

    timeout = os.environ.get("BENCH_VISIBILITY_TIMEOUT")
    # Redis only: RabbitMQ redelivers a dead worker's messages at once, and keeps its own
    # transport options (publisher confirms).
    if timeout and broker_kind(os.environ.get("CELERY_BROKER_URL") or "redis://") == "redis":
        app.conf.broker_transport_options = {
            "visibility_timeout": int(timeout),
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
        }
    reuse = os.environ.get("BENCH_DB_REUSE_MAX")
    if reuse:
        # Celery's Django fixup closes every database connection before and after each task
        # unless this is set; then only every Nth time.
        app.conf["CELERY_DB_REUSE_MAX"] = int(reuse)
    if os.environ.get("BENCH_PROFILE") or os.environ.get("BENCH_CALL_LOG"):
        import django

        django.setup()
    if os.environ.get("BENCH_PROFILE"):
        _install_profile(os.environ["BENCH_PROFILE"])
    if os.environ.get("BENCH_CALL_LOG"):
        _install_call_log(os.environ["BENCH_CALL_LOG"])


_configure()
