"""Run claimed attempts: build the client, run the primitive, return the envelope.

A batch (one Celery message) runs its calls concurrently on this process's thread pool, and
records each group of calls that have finished in one transaction, as they finish: a slow
call does not hold back the others' results.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from orchestrator.core.envelope import Envelope
from providers.threads import process_pool
from studio import queues
from studio.db import connection_release
from studio.services import calls
from studio.services.attempts import AttemptWork, attempts_finish, attempts_start
from studio.services.calls import ensure_replay

log = logging.getLogger(__name__)


def _threads() -> ThreadPoolExecutor:
    return process_pool("attempt", settings.ORCHESTRA_ATTEMPT_THREADS)


def execute(work: AttemptWork) -> Envelope:
    """The attempt's call (`studio.services.calls`), its time limit an envelope: Celery raises
    the soft limit into the task's own thread, where a lone attempt runs."""
    try:
        return calls.execute(work)
    except SoftTimeLimitExceeded:
        return Envelope.failure("timeout", "The attempt ran past its time limit.", status="timeout")


def _execute_safely(work: AttemptWork) -> Envelope:
    try:
        return execute(work)
    except Exception as error:  # run_primitive never raises; this guards the set-up around it
        log.exception("attempt %s failed outside its primitive", work.attempt_id)
        return Envelope.failure("internal", f"{type(error).__name__}: {error}")


def _execute_in_thread(work: AttemptWork) -> Envelope:
    """On a pool thread: a replay lookup may take a connection of this process's pool (Celery's
    task hooks tend only the main thread's); hand it back when the call ends, so that idle
    threads hold none."""
    try:
        return _execute_safely(work)
    finally:
        connection_release()


def _waits(work: AttemptWork) -> bool:
    """Whether the call waits on I/O: any real endpoint, or replay with simulated latency."""
    return not work.model.startswith("replay/") or settings.ORCHESTRA_REPLAY_LATENCY != "off"


def _prefetch(works: Sequence[AttemptWork]) -> None:
    """One query for the recordings a batch of replay attempts will ask for."""
    wanted = [
        (work.model.removeprefix("replay/"), work.primitive, str(item))
        for work in works
        if work.model.startswith("replay/")
        for item in ([work.request["item_id"]] if work.request.get("item_id") else work.request.get("items") or [])
    ]
    if wanted:
        ensure_replay().prefetch(wanted)


def _check_back(running: dict[int, float]) -> None:
    """Attempts another delivery claimed are running there, or were, if its worker died
    (this may be the dead worker's message, delivered again a moment before they count as
    stale). Look again once they would be stale: then they have finished, or are run here."""
    wait_s = max(running.values()) + 1.0
    log.info("attempts %s run elsewhere; checking back in %.0f s", sorted(running), wait_s)
    queues.send(queues.EXECUTE_ATTEMPTS, sorted(running), countdown=wait_s)


RECORD_PATIENCE_S = 60.0  # how long finished calls wait for the database before the task retries


def _record(results: list[tuple[int, Envelope]]) -> list[int]:
    """attempts_finish, patient with a database that is down or restarting: the calls are
    made and paid for, so their results wait for it (up to RECORD_PATIENCE_S) rather than
    the task failing and a redelivery calling the provider again. Recording is idempotent,
    so a retry after a commit whose answer was lost changes nothing."""
    deadline, pause = time.monotonic() + RECORD_PATIENCE_S, 0.5
    while True:
        try:
            return attempts_finish(results=results)
        except (OperationalError, InterfaceError) as error:
            if time.monotonic() + pause > deadline:
                raise
            log.warning("recording %d attempts failed (%s); retrying in %.1f s", len(results), error, pause)
            connection.close()
            time.sleep(pause)
            pause = min(pause * 2, 8.0)


def execute_batch(attempt_ids: Sequence[int]) -> int:
    """Claim, run and record a batch of attempts; returns how many were recorded. Idempotent:
    attempts already finished are skipped, each is billed once."""
    claim = attempts_start(attempt_ids=attempt_ids)
    if claim.running_elsewhere:
        _check_back(claim.running_elsewhere)
    works = claim.works
    if not works:
        return 0
    _prefetch(works)
    if len(works) == 1 or not any(_waits(work) for work in works):
        # Nothing to overlap: threads would only add switching (replay with no latency
        # cost 2.2 ms of CPU a call on the pool, 0.8 ms inline; bench/throughput.py).
        return len(_record([(work.attempt_id, _execute_safely(work)) for work in works]))
    futures: dict[Future[Envelope], AttemptWork] = {_threads().submit(_execute_in_thread, w): w for w in works}
    pending, recorded = set(futures), 0
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            recorded += len(_record([(futures[f].attempt_id, f.result()) for f in done]))
    except SoftTimeLimitExceeded:
        timeout = Envelope.failure("timeout", "The attempt ran past its time limit.", status="timeout")
        recorded += len(_record([(futures[f].attempt_id, timeout) for f in pending]))
    return recorded
