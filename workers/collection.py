"""Run a collection: its pending cells through the real provider path, each scored by its
task's checker (a replayed one keeps its recorded score) and kept as a `RecordedOutcome`.

Calls run on a thread pool, at most `max_concurrency` in flight per endpoint. The budget
holds to within one call per endpoint: a call is sent only while the spend is under the
budget, and a second one on an endpoint only when the spend, the calls in flight and this
one, each at the dearest cost its pair has had, stay within it (a pair not seen yet runs one
call at a time). The journal in `studio.services.collections` makes a collection resumable
after its runner dies.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict, deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from decimal import Decimal

from django.conf import settings

from providers.checkers import check
from providers.llm import EndpointConfig, LLMClient
from providers.primitives import PrimitiveInput, run_primitive
from studio.db import connection_release
from studio.models import JobStatus
from studio.services.attempts import envelope_redact
from studio.services.collections import (
    CellResult,
    CellWork,
    cell_start,
    cells_finish,
    cells_progress,
    collection_end,
    collection_heartbeat,
    collection_progress,
    collection_start,
    collection_status,
    collection_work,
    dearest_costs,
)

log = logging.getLogger(__name__)

HEARTBEAT_S = 10.0  # a sign of life this often while calls are slow
CANCEL_CHECK_S = 1.0  # how often a cancel is looked for


def call_cell(work: CellWork) -> CellResult | None:
    """Send one cell's call and score its answer; None when it must not be sent (the
    collection stopped, or another runner took the cell)."""
    try:
        started = cell_start(cell_id=work.cell_id)
        connection_release()  # not held through the provider call: the pool has few connections
        if not started:
            return None
        config = EndpointConfig(
            model=work.model, api_base=work.api_base, api_key=work.api_key,
            input_cost_per_mtok=work.input_cost_per_mtok, output_cost_per_mtok=work.output_cost_per_mtok,
            timeout_s=float(settings.ORCHESTRA_PROVIDER_TIMEOUT_S), max_retries=settings.ORCHESTRA_PROVIDER_MAX_RETRIES,
        )  # fmt: skip
        if config.is_replay:
            from studio.services.calls import ensure_replay

            ensure_replay()
        task = PrimitiveInput(prompt=work.prompt, item_id=work.item_id, benchmark=work.benchmark, **work.request)
        # Providers echo the key in their errors (OpenAI's 401 names it): none reaches a row.
        envelope = envelope_redact(run_primitive(work.primitive, LLMClient(config), task), work.api_key)
        usage = CellResult(score=None, response=None, prompt_tokens=envelope.tokens_in,
                           completion_tokens=envelope.tokens_out, cost_usd=envelope.cost_usd,
                           latency_s=envelope.latency_s)  # fmt: skip
        if not envelope.ok:
            return replace(usage, error=f"{envelope.error_kind}: {envelope.error_message}")
        recorded = envelope.artifacts.get("recorded_score") if envelope.artifacts.get("replay") else None
        if recorded is not None:  # a replayed recording: its score, and its tokens as recorded (null stays null)
            score = float(recorded)
            known = envelope.artifacts.get("tokens_recorded", [True, True])
            usage = replace(usage, prompt_tokens=usage.prompt_tokens if known[0] else None,
                            completion_tokens=usage.completion_tokens if known[1] else None)  # fmt: skip
        else:
            score = check(work.checker, envelope.answer or "", work.gold, item=work.item).score
        return replace(usage, score=score, response=envelope.output)
    finally:
        connection_release()


def run_collection(collection_id: int, *, worker: str = "", threads: int = 64) -> str:
    """Run a queued collection to its end; returns the status it ended with."""
    collection = collection_start(collection_id=collection_id, worker=worker)
    if collection is None:
        log.info("collection %s is gone or has ended; nothing to do", collection_id)
        return collection_status(collection_id=collection_id) or "gone"
    budget, spent = float(collection.budget_usd), float(collection.spent_usd)
    queues: dict[int, deque[CellWork]] = defaultdict(deque)
    for work in collection_work(collection_id=collection_id):
        queues[work.endpoint_id].append(work)
    dearest = dearest_costs(collection_id=collection_id)
    in_flight: dict[Future[CellResult | None], CellWork] = {}
    per_endpoint: dict[int, int] = defaultdict(int)
    limit = collection.max_concurrency
    stopped_for_budget = cancelled = False
    last_check = last_beat = time.monotonic()

    def reserved() -> float:
        return sum(dearest.get((w.endpoint_id, w.primitive), 0.0) for w in in_flight.values())

    def may_send(work: CellWork) -> bool:
        if spent >= budget:
            return False
        if per_endpoint[work.endpoint_id] == 0:
            return True
        cost = dearest.get((work.endpoint_id, work.primitive))
        return cost is not None and spent + reserved() + cost <= budget

    with ThreadPoolExecutor(
        max_workers=max(1, min(threads, limit * max(1, len(queues)))), thread_name_prefix="collect"
    ) as pool:
        while True:
            for endpoint, queue in queues.items():
                while queue and per_endpoint[endpoint] < limit and not cancelled and may_send(queue[0]):
                    work = queue.popleft()
                    in_flight[pool.submit(call_cell, work)] = work
                    per_endpoint[endpoint] += 1
            if not in_flight:
                stopped_for_budget = any(queues.values()) and not cancelled
                break
            finished, _ = wait(list(in_flight), timeout=CANCEL_CHECK_S, return_when=FIRST_COMPLETED)
            ended: list[tuple[CellWork, CellResult]] = []
            for future in finished:
                work = in_flight.pop(future)
                per_endpoint[work.endpoint_id] -= 1
                try:
                    result = future.result()
                except Exception as error:  # set-up around the call (the primitive itself never raises)
                    log.exception("cell %s of collection %s failed outside its call", work.cell_id, collection_id)
                    result = CellResult(score=None, response=None, prompt_tokens=0, completion_tokens=0, cost_usd=0.0,
                                        latency_s=0.0, error=f"{type(error).__name__}: {error}")  # fmt: skip
                if result is None:  # not sent: the collection stopped, or another runner took the cell
                    last_check = 0.0
                    continue
                ended.append((work, result))
                key = (work.endpoint_id, work.primitive)
                dearest[key] = max(dearest.get(key, 0.0), result.cost_usd)
            if ended:
                spent = float(cells_finish(collection_id=collection_id, results=ended))
            now = time.monotonic()
            if now - last_check >= CANCEL_CHECK_S:  # a cancel, seen at once when a cell was refused
                last_check = now
                cancelled = collection_progress(collection_id=collection_id) != JobStatus.RUNNING
                if cancelled:
                    for queue in queues.values():
                        queue.clear()
            if now - last_beat >= HEARTBEAT_S:
                last_beat = now
                collection_heartbeat(collection_id=collection_id)
    if cancelled or collection_status(collection_id=collection_id) != JobStatus.RUNNING:
        return collection_status(collection_id=collection_id)
    if stopped_for_budget:
        left = sum(len(queue) for queue in queues.values())
        message = f"The budget ${Decimal(str(budget)):f} is spent (${spent:.6f}); {left} cell(s) wait for a larger one."
        collection_end(collection_id=collection_id, status=JobStatus.STOPPED, message=message)
        return JobStatus.STOPPED
    total, _, failed = cells_progress(collection_id=collection_id)
    message = f"{total - failed} cell(s) recorded" + (f", {failed} failed at the provider." if failed else ".")
    collection_end(collection_id=collection_id, status=JobStatus.SUCCEEDED, message=message)
    return JobStatus.SUCCEEDED
