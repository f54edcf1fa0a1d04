"""The Celery app (`studio.queues`), as a worker runs it: its tasks, and the worker's own set-up.

Start a worker with: celery -A workers worker -Q orchestrator,workers,training
"""

import logging
import os
import threading
from typing import Any

from celery import bootsteps, signals

# The same default as studio.asgi: a worker started by hand is a deployment's.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings.production")

from studio.queues import QUEUES, app, broker_problem  # noqa: E402

__all__ = ["QUEUES", "app"]

app.autodiscover_tasks(["workers"])

log = logging.getLogger(__name__)


class RecoverySweep(bootsteps.StartStopStep):
    """In each worker's main process, a thread that asks every ORCHESTRA_RECOVERY_INTERVAL_S
    for one `workers.runs_recover` across all workers (studio.services.scheduling). A thread,
    not the worker's timer: while Redis is away the request may block, and the timer shares
    the loop that consumes messages."""

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self, parent: Any) -> None:
        from django.conf import settings

        interval = settings.ORCHESTRA_RECOVERY_INTERVAL_S
        if interval > 0 and "orchestrator" in {queue.name for queue in parent.app.amqp.queues.consume_from.values()}:
            self.thread = threading.Thread(target=self._loop, args=(interval,), name="recovery-sweep", daemon=True)
            self.thread.start()

    def stop(self, parent: Any) -> None:
        self.stopped.set()

    def _loop(self, interval: int) -> None:
        from studio.services.scheduling import recovery_request

        while not self.stopped.wait(interval):
            try:
                recovery_request()
            except Exception:  # never let the thread die: it is the way out of a lost message
                log.warning("recovery sweep request failed", exc_info=True)


app.steps["worker"].add(RecoverySweep)


@signals.celeryd_init.connect
def refuse_a_bad_broker(conf: Any = None, **kwargs: Any) -> None:
    """A `celery worker` whose broker URL is wrong or unreachable stops at once with one line
    naming CELERY_BROKER_URL, instead of retrying for minutes (broker_connection_retry_on_startup,
    kept for a broker lost later). `celeryd_init` is sent by the worker program only, before it
    connects; SystemExit passes through Celery's signal dispatch and prints just its message."""
    url = (conf or app.conf).broker_url or ""
    if url:
        problem = broker_problem(url, from_redis_url=not os.environ.get("CELERY_BROKER_URL"))
    else:
        problem = "CELERY_BROKER_URL and REDIS_URL are unset: the worker has no broker."
    if problem is not None:
        raise SystemExit(problem)


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
    """Around each task, as Django does around each request: the connection goes back to the
    process's pool (CONN_MAX_AGE is 0), or is closed without the pool. Celery's own hooks do
    so only every CELERY_DB_REUSE_MAX tasks."""
    from django.db import close_old_connections

    close_old_connections()
