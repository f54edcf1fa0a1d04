"""The Celery app. Queues: `orchestrator` (run steps), `workers` (model calls), `training`.

Start a worker with: celery -A workers worker -Q orchestrator,workers,training
"""

import os
from typing import Any

from celery import Celery, signals
from kombu import Exchange, Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings.dev")

QUEUES = ("orchestrator", "workers", "training")

app = Celery("orchestra")
# Broker, serializers and time limits: the CELERY_* Django settings.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name, Exchange(name, type="direct"), routing_key=name) for name in QUEUES]
# Which queue each task goes to; tasks not listed go to `workers` (CELERY_TASK_DEFAULT_QUEUE).
app.conf.task_routes = {
    "workers.ping": {"queue": "workers"},
    "workers.execute_attempt": {"queue": "workers"},
    "workers.execute_attempts": {"queue": "workers"},
    "workers.run_step": {"queue": "orchestrator"},
    "workers.train": {"queue": "training"},
    "workers.evaluate": {"queue": "training"},
}
app.autodiscover_tasks(["workers"])


@signals.worker_init.connect
def preload(**kwargs: Any) -> None:
    """Load litellm and the primitives once in the worker's parent, before it forks, so the
    first attempt of each child does not pay for the imports (seconds). Then move everything
    loaded so far out of the garbage collector's sight: full collections no longer walk
    Django's and litellm's objects (about a third of a replay call's CPU; bench/throughput.py),
    and forked children keep sharing those pages."""
    import gc

    import workers.execution  # noqa: F401

    gc.freeze()


@signals.task_prerun.connect
@signals.task_postrun.connect
def drop_stale_connections(**kwargs: Any) -> None:
    """Connections are reused across tasks (CELERY_DB_REUSE_MAX); close the ones that broke
    or outlived CONN_MAX_AGE, as Django does around each request."""
    from django.db import close_old_connections

    close_old_connections()
