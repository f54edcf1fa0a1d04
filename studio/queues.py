"""The Celery app as every process sees it, and `send`, the one way a task is sent.

Queues: `orchestrator` (run steps, runs recorded after /v1's fast path, the recovery sweep),
`workers` (model calls), `training` (training jobs and evaluations). Tasks are sent by name:
`studio/` never imports the tasks, which `workers/` defines (`workers.celery` adds the worker's own set-up to this app).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from celery import Celery
from django.core.exceptions import ImproperlyConfigured
from kombu import Connection, Exchange, Queue
from kombu.utils.url import maybe_sanitize_url

from studio.settings.env import BROKER_KINDS, broker_kind, broker_transport_options, celery_redis_url

log = logging.getLogger(__name__)

QUEUES = ("orchestrator", "workers", "training")

# The tasks, by name, and the queue each goes to.
PING = "workers.ping"
EXECUTE_ATTEMPTS = "workers.execute_attempts"
RUN_STEP = "workers.run_step"
RECORD_RUN = "workers.record_run"
RUNS_RECOVER = "workers.runs_recover"
VERIFY_RUN = "workers.verify_run"
TRAIN = "workers.train"
EVALUATE = "workers.evaluate"
COLLECT = "workers.collect"
ROUTES = {
    PING: "workers",
    EXECUTE_ATTEMPTS: "workers",
    "workers.execute_attempt": "workers",  # one attempt: messages sent before execute_attempts took its place
    VERIFY_RUN: "workers",
    RUN_STEP: "orchestrator",
    RECORD_RUN: "orchestrator",
    RUNS_RECOVER: "orchestrator",
    TRAIN: "training",
    EVALUATE: "training",
    COLLECT: "training",
}

app = Celery("orchestra")
# Broker, serializers and time limits: the CELERY_* Django settings.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name, Exchange(name, type="direct"), routing_key=name) for name in QUEUES]
# Tasks not listed go to `workers` (CELERY_TASK_DEFAULT_QUEUE).
app.conf.task_routes = {name: {"queue": queue} for name, queue in ROUTES.items()}


def send(name: str, *args: Any, countdown: float | None = None) -> bool:
    """Send task `name` with `args`; False (logged) when the broker cannot take it. The pooled
    producer is tried first (it waits out a short outage: CELERY_TASK_PUBLISH_RETRY_POLICY),
    then a new connection: after Redis restarts, a pooled producer may still hold a channel of
    the old connection and fail at once (kombu: AttributeError in `_connparams`).

    Nobody reads what a task sent here returns (CELERY_TASK_IGNORE_RESULT), and the client is
    told so: otherwise Celery's Redis result backend subscribes to each task's result channel
    as it is sent and unsubscribes once its AsyncResult is collected, two Redis commands per
    message for a result that never comes."""
    options: dict[str, Any] = {"ignore_result": True}
    if countdown is not None:
        options["countdown"] = countdown
    try:
        app.send_task(name, args, **options)
        return True
    except Exception:
        log.info("sending %s through the producer pool failed; trying a new connection", name, exc_info=True)
    try:
        with app.connection_for_write() as connection:
            app.send_task(name, args, connection=connection, **options)
        return True
    except Exception:
        log.warning("could not send %s%s: the broker is unreachable", name, args, exc_info=True)
        return False


BROKER_CHECK_TIMEOUT_S = 5


def broker_problem(url: str, *, from_redis_url: bool = False, timeout_s: int = BROKER_CHECK_TIMEOUT_S) -> str | None:
    """Why Celery cannot use the broker at `url`, in one line that names CELERY_BROKER_URL (or,
    `from_redis_url`, says the broker is REDIS_URL's Redis because it is unset) and hides the
    password; None when the broker takes a connection. One try of at most `timeout_s` seconds:
    at start a wrong address should fail at once, where Celery's own start-up would retry it
    for minutes."""
    shown = maybe_sanitize_url(url) if "@" in url else url  # the password, if any, as **
    where = (
        f"CELERY_BROKER_URL is unset, so the broker is REDIS_URL's {shown}"
        if from_redis_url
        else f"CELERY_BROKER_URL={shown}"
    )
    kind = broker_kind(url)
    if kind is None:
        schemes = ", ".join(f"{scheme}://" for scheme in BROKER_KINDS)
        scheme = url.partition("://")[0] if "://" in url else url
        return f"{where}: unknown broker scheme {scheme!r}; use one of {schemes}."
    options = broker_transport_options(kind, visibility_timeout=3600)
    connection = Connection(url, connect_timeout=timeout_s, transport_options=options)
    try:
        connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout_s)
    except Exception as error:  # any failure to connect: refused, unknown host, bad login, timeout
        reason = " ".join(str(error).split()) or type(error).__name__
        return f"{where}: cannot connect to the Celery broker ({reason})."
    finally:
        connection.release()
    return None


def broker_problem_in(environ: Mapping[str, str]) -> str | None:
    """broker_problem for the broker of a process started with `environ`: CELERY_BROKER_URL,
    else REDIS_URL's Redis (which `manage.py up` or a bench may have just started)."""
    if environ.get("CELERY_BROKER_URL"):
        return broker_problem(environ["CELERY_BROKER_URL"])
    try:
        return broker_problem(celery_redis_url(environ.get("REDIS_URL", "")), from_redis_url=True)
    except ImproperlyConfigured as error:
        return str(error)


def queue_depths(timeout_s: int = 1) -> dict[str, int] | None:
    """Messages waiting in each queue (not those a worker has taken), or None when the broker
    does not answer within `timeout_s`. A passive declare counts them on either broker (kombu's
    Redis transport sums the queue's lists); a queue never declared holds nothing."""
    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=timeout_s)
            depths = {}
            for queue in QUEUES:
                try:
                    with connection.channel() as channel:
                        declared = channel.queue_declare(queue=queue, passive=True)  # type: ignore[attr-defined]
                        depths[queue] = int(declared.message_count)
                except connection.channel_errors:  # not declared yet (RabbitMQ closes the channel)
                    depths[queue] = 0
            return depths
    except Exception as exc:  # any failure means "not reachable"
        log.warning("queue depths: the broker did not answer: %s", exc)
        return None
