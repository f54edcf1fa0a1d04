"""An attempt's call in this process: its endpoint as the settings configure it, replay served
from Postgres, its tokens streamed to whoever watches the run, and
`providers.primitives.run_attempt` to run it. /v1's fast path calls `execute_here` on its own
thread; the workers' batches call `execute` (workers/execution.py, which adds Celery's time
limit)."""

from __future__ import annotations

import logging
import threading

from django.conf import settings

from orchestrator.core.envelope import Envelope
from providers import replay
from providers.llm import EndpointConfig
from providers.primitives import run_attempt
from studio.db import connection_release
from studio.selectors.replay_store import DatabaseStore
from studio.services.attempts import AttemptWork
from studio.streaming import RunTokens, watched

log = logging.getLogger(__name__)

_lock = threading.Lock()
_store: DatabaseStore | None = None


def ensure_replay() -> DatabaseStore:
    """Serve `replay/` from Postgres in this process (once)."""
    global _store
    with _lock:
        if _store is None:
            _store = DatabaseStore()
            replay.install(_store, latency=replay.Latency.parse(settings.ORCHESTRA_REPLAY_LATENCY))
        return _store


def replay_reset() -> None:
    """Forget the installed replay store, so the next call installs it again with the current
    settings (tests that change ORCHESTRA_REPLAY_LATENCY)."""
    global _store
    with _lock:
        _store = None


def endpoint_config(work: AttemptWork) -> EndpointConfig:
    return EndpointConfig(
        model=work.model,
        api_base=work.api_base or None,
        api_key=work.api_key,
        input_cost_per_mtok=work.input_cost_per_mtok,
        output_cost_per_mtok=work.output_cost_per_mtok,
        timeout_s=float(settings.ORCHESTRA_PROVIDER_TIMEOUT_S),
        max_retries=settings.ORCHESTRA_PROVIDER_MAX_RETRIES,
    )


def _tokens(work: AttemptWork, config: EndpointConfig) -> RunTokens | None:
    """Where the attempt's tokens go as they arrive: the fast path's own, for a streamed /v1
    request; else the run's group while someone watches the run (studio.streaming), where
    someone can (`AttemptWork.watchable`)."""
    if work.tokens is not None:
        return work.tokens
    if config.is_replay or not work.run_id or not work.watchable or not watched(work.run_id):
        return None
    return RunTokens(work.run_id, work.node_key, work.number, work.primitive)


def execute(work: AttemptWork) -> Envelope:
    config = endpoint_config(work)
    if config.is_replay:
        ensure_replay()
    return run_attempt(work.primitive, config, work.request, work.params, _tokens(work, config))


def execute_here(work: AttemptWork) -> Envelope:
    """Run one attempt on the caller's thread, and hand back the connection a replay lookup may
    have taken (no request hook tends this thread's): /v1's fast path calls a pair so."""
    try:
        return execute(work)
    except Exception as error:  # run_primitive never raises; this guards the set-up around it
        log.exception("attempt %s failed outside its primitive", work.attempt_id)
        return Envelope.failure("internal", f"{type(error).__name__}: {error}")
    finally:
        connection_release()
