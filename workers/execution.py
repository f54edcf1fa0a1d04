"""Run one claimed attempt: build the client, run the primitive, return the envelope."""

from __future__ import annotations

import threading

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from orchestrator.envelope import Envelope
from studio.services.attempts import AttemptWork
from workers import replay
from workers.llm import EndpointConfig, LLMClient
from workers.primitives import PrimitiveInput, run_primitive
from workers.replay.db_store import DatabaseStore

_replay_lock = threading.Lock()
_replay_installed = False

INPUT_FIELDS = ("prompt", "item_id", "benchmark", "context", "tests", "entry_point", "candidate", "tools")


def ensure_replay() -> None:
    """Serve `replay/` from Postgres in this process (once)."""
    global _replay_installed
    with _replay_lock:
        if not _replay_installed:
            latency = replay.Latency.parse(settings.ORCHESTRA_REPLAY_LATENCY)
            replay.install(DatabaseStore(), latency=latency)
            _replay_installed = True


def execute(work: AttemptWork) -> Envelope:
    config = EndpointConfig(
        model=work.model,
        api_base=work.api_base or None,
        api_key=work.api_key,
        input_cost_per_mtok=work.input_cost_per_mtok,
        output_cost_per_mtok=work.output_cost_per_mtok,
        timeout_s=float(settings.ORCHESTRA_PROVIDER_TIMEOUT_S),
        max_retries=settings.ORCHESTRA_PROVIDER_MAX_RETRIES,
    )
    if config.is_replay:
        ensure_replay()
    task = PrimitiveInput(**{key: work.request[key] for key in INPUT_FIELDS if key in work.request})
    try:
        return run_primitive(work.primitive, LLMClient(config), task, work.params)
    except SoftTimeLimitExceeded:
        return Envelope.failure("timeout", "The attempt ran past its time limit.", status="timeout")
