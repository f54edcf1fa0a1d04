"""The Celery app as every process sees it, and `send`, the one way a task is sent.

Queues: `orchestrator` (run steps, the recovery sweep), `workers` (model calls), `training`
(training jobs and evaluations). Tasks are sent by name: `studio/` never imports the tasks,
which `workers/` defines (`workers.celery` adds the worker's own set-up to this app).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from kombu import Exchange, Queue

log = logging.getLogger(__name__)

QUEUES = ("orchestrator", "workers", "training")

# The tasks, by name, and the queue each goes to.
PING = "workers.ping"
EXECUTE_ATTEMPTS = "workers.execute_attempts"
RUN_STEP = "workers.run_step"
RUNS_RECOVER = "workers.runs_recover"
VERIFY_RUN = "workers.verify_run"
TRAIN = "workers.train"
EVALUATE = "workers.evaluate"
ROUTES = {
    PING: "workers",
    EXECUTE_ATTEMPTS: "workers",
    "workers.execute_attempt": "workers",  # one attempt: messages sent before execute_attempts took its place
    VERIFY_RUN: "workers",
    RUN_STEP: "orchestrator",
    RUNS_RECOVER: "orchestrator",
    TRAIN: "training",
    EVALUATE: "training",
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
    the old connection and fail at once (kombu: AttributeError in `_connparams`)."""
    options: dict[str, Any] = {} if countdown is None else {"countdown": countdown}
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
