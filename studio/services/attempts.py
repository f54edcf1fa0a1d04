"""Running attempts: claim them, then record each envelope exactly once, in batches."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from orchestrator.core.envelope import Envelope
from studio.crypto import MIN_SECRET_CHARS, REDACTED, decrypt_secret
from studio.models import Attempt, AttemptStatus, ModelEndpoint, Node, Primitive, Run
from studio.services.bulk import rows_update
from studio.services.events import run_events_append
from studio.services.scheduling import step_request

log = logging.getLogger(__name__)

FINISHED = {AttemptStatus.OK, AttemptStatus.ERROR, AttemptStatus.TIMEOUT, AttemptStatus.CANCELLED}


@dataclass(frozen=True)
class AttemptWork:
    """Everything a worker needs to run an attempt, without touching the database."""

    attempt_id: int
    model: str
    api_base: str
    api_key: str | None = field(repr=False)
    input_cost_per_mtok: float | None
    output_cost_per_mtok: float | None
    primitive: str
    params: dict[str, Any]
    request: dict[str, Any]
    run_id: int = 0
    node_key: str = ""
    number: int = 0  # the attempt's number on its node
    # Where its tokens go as they arrive (studio.streaming.RunTokens): set by /v1's fast path for
    # a streamed request; else the executor streams it only while the run is watched.
    tokens: Any = field(default=None, repr=False, compare=False)
    # False where nobody can watch the run during the call, so the executor need not ask: a /v1
    # fast run is not written yet, and a watcher waits for its record (studio.consumers).
    watchable: bool = True


def _price(value: Decimal | None) -> float | None:
    return float(value) if value is not None else None


def _endpoint_key(attempt: Attempt, keys: dict[int, str | None]) -> str | None:
    """The attempt's endpoint's API key; each endpoint's is decrypted once per batch."""
    endpoint = attempt.endpoint
    if endpoint.pk not in keys:
        keys[endpoint.pk] = decrypt_secret(endpoint.api_key_encrypted) if endpoint.api_key_encrypted else None
    return keys[endpoint.pk]


def endpoint_work(
    *,
    attempt_id: int,
    endpoint: ModelEndpoint,
    api_key: str | None,
    primitive: Primitive,
    request: dict[str, Any],
    text: str,
    run_id: int = 0,
    node_key: str = "",
    number: int = 0,
) -> AttemptWork:
    """What a call of (endpoint, primitive) on a node of `text` needs, read off its rows."""
    return AttemptWork(
        attempt_id=attempt_id,
        model=endpoint.model,
        api_base=endpoint.api_base,
        api_key=api_key,
        input_cost_per_mtok=_price(endpoint.input_cost_per_mtok),
        output_cost_per_mtok=_price(endpoint.output_cost_per_mtok),
        primitive=primitive.name,
        params={**primitive.parameters, **request.get("params", {})},
        request={"prompt": text, **request},
        run_id=run_id,
        node_key=node_key,
        number=number,
    )


def _work(attempt: Attempt, keys: dict[int, str | None]) -> AttemptWork:
    return endpoint_work(
        attempt_id=attempt.pk, endpoint=attempt.endpoint, api_key=_endpoint_key(attempt, keys),
        primitive=attempt.primitive, request=attempt.request, text=attempt.node.text,
        run_id=attempt.node.run_id, node_key=attempt.node.key, number=attempt.number,
    )  # fmt: skip


def _claimable(attempt: Attempt, stale_before: datetime) -> bool:
    """Queued, or running but started so long ago that its worker must be dead."""
    if attempt.status == AttemptStatus.QUEUED:
        return True
    started = attempt.started_at
    return attempt.status == AttemptStatus.RUNNING and (started is None or started < stale_before)


@dataclass(frozen=True)
class Claim:
    """What a delivery of a batch may run, and what runs elsewhere for now."""

    works: list[AttemptWork]
    running_elsewhere: dict[int, float]  # attempt id -> seconds until it counts as stale


@transaction.atomic
def attempts_start(*, attempt_ids: Sequence[int], stale_after_s: float | None = None) -> Claim:
    """Claim attempts to run, in two statements. Left out: those gone, finished, or running
    elsewhere (started less than `stale_after_s` ago; default ORCHESTRA_ATTEMPT_STALE_S).
    So a message delivered twice neither runs nor bills an attempt twice, while one whose
    worker died mid-call runs it again."""
    stale = settings.ORCHESTRA_ATTEMPT_STALE_S if stale_after_s is None else stale_after_s
    now = timezone.now()
    stale_before = now - timedelta(seconds=stale)
    attempts = list(
        Attempt.objects.select_for_update(of=("self",))
        .select_related("endpoint", "primitive", "node")
        .filter(pk__in=attempt_ids)
        .order_by("pk")
    )
    if len(attempts) < len(set(attempt_ids)):
        gone = sorted(set(attempt_ids) - {a.pk for a in attempts})
        log.warning("attempts %s no longer exist; nothing to run", gone)
    claimed, elsewhere = [], {}
    for attempt in attempts:
        if _claimable(attempt, stale_before):
            claimed.append(attempt)
        elif attempt.status == AttemptStatus.RUNNING and attempt.started_at is not None:
            elsewhere[attempt.pk] = (attempt.started_at - stale_before).total_seconds()
        else:
            log.info("attempt %s is %s; not running it again", attempt.pk, attempt.status)
    if claimed:
        Attempt.objects.filter(pk__in=[a.pk for a in claimed]).update(status=AttemptStatus.RUNNING, started_at=now)
    keys: dict[int, str | None] = {}
    return Claim(works=[_work(attempt, keys) for attempt in claimed], running_elsewhere=elsewhere)


def attempt_start(*, attempt_id: int) -> AttemptWork | None:
    """Claim one attempt (see attempts_start); None when there is nothing to run now."""
    works = attempts_start(attempt_ids=[attempt_id]).works
    return works[0] if works else None


ATTEMPT_RESULT_FIELDS = [
    "status", "envelope", "tokens_in", "tokens_out", "cost_usd", "latency_s", "error_kind", "error_message",
    "finished_at",
]  # fmt: skip


def _add_to_nodes(totals: dict[int, list[Any]]) -> None:
    """Add tokens, cost and latency to several nodes in one UPDATE."""
    table = Node._meta.db_table
    values = ", ".join(["(%s::bigint, %s::bigint, %s::bigint, %s::numeric, %s::double precision)"] * len(totals))
    params = [value for node_id, row in totals.items() for value in (node_id, *row)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS n SET tokens_in = n.tokens_in + v.tin, tokens_out = n.tokens_out + v.tout, "  # noqa: S608 - a model's table name
            "cost_usd = n.cost_usd + v.cost, latency_s = n.latency_s + v.lat "
            f"FROM (VALUES {values}) AS v(id, tin, tout, cost, lat) WHERE n.id = v.id",
            params,
        )


def finished_event(attempt_id: int, node_key: str, envelope: Envelope) -> tuple[str, dict[str, Any]]:
    """The `attempt.finished` event of an attempt that ended with `envelope`."""
    return (
        "attempt.finished",
        {
            "attempt": attempt_id,
            "node": node_key,
            "status": envelope.status,
            "answer": envelope.answer,
            "tokens_in": envelope.tokens_in,
            "tokens_out": envelope.tokens_out,
            "cost_usd": envelope.cost_usd,
            "latency_s": envelope.latency_s,
            "error_kind": envelope.error_kind,
            "error_message": envelope.error_message,
        },
    )


def _scrubbed(value: Any, secret: str) -> Any:
    if isinstance(value, str):
        return value.replace(secret, REDACTED)
    if isinstance(value, dict):
        return {key: _scrubbed(item, secret) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(item, secret) for item in value]
    return value


def envelope_redact(envelope: Envelope, secret: str | None) -> Envelope:
    """The envelope without the endpoint's API key anywhere in it: providers echo the key
    in their errors (OpenAI's 401 names it), and envelopes go to rows, events and logs."""
    if not secret or len(secret) < MIN_SECRET_CHARS:
        return envelope
    return Envelope(**_scrubbed(envelope.to_dict(), secret))


@transaction.atomic
def attempts_finish(*, results: Sequence[tuple[int, Envelope]]) -> list[int]:
    """Record envelopes and bill them to their nodes and runs, in a few statements, except
    those another delivery of the same attempt already recorded. Returns the ids recorded."""
    envelopes = dict(results)
    attempts = [
        attempt
        for attempt in Attempt.objects.select_for_update(of=("self",))
        .select_related("node", "endpoint")
        .only("status", "node__key", "node__run_id", "endpoint__api_key_encrypted")  # the fields written are set below
        .filter(pk__in=envelopes)
        .order_by("pk")
        if attempt.status not in FINISHED
    ]
    if not attempts:
        return []
    now = timezone.now()
    nodes: dict[int, list[Any]] = {}
    runs: dict[int, list[Any]] = {}
    events: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    keys: dict[int, str | None] = {}
    for attempt in attempts:
        envelope = envelope_redact(envelopes[attempt.pk], _endpoint_key(attempt, keys))
        cost = Decimal(repr(envelope.cost_usd))
        attempt.status = AttemptStatus(envelope.status)
        attempt.envelope = envelope.to_dict()
        attempt.tokens_in, attempt.tokens_out = envelope.tokens_in, envelope.tokens_out
        attempt.cost_usd, attempt.latency_s = cost, envelope.latency_s
        attempt.error_kind = envelope.error_kind or ""
        attempt.error_message = envelope.error_message or ""
        attempt.finished_at = now
        row = [envelope.tokens_in, envelope.tokens_out, cost, envelope.latency_s]
        for totals, key in ((nodes, attempt.node_id), (runs, attempt.node.run_id)):
            totals[key] = [a + b for a, b in zip(totals[key], row, strict=True)] if key in totals else list(row)
        events.setdefault(attempt.node.run_id, []).append(finished_event(attempt.pk, attempt.node.key, envelope))
    rows_update(attempts, ATTEMPT_RESULT_FIELDS)
    # Runs before nodes, in id order: a run step locks its run, then writes its nodes.
    for run_id, (tokens_in, tokens_out, cost, latency) in sorted(runs.items()):
        Run.objects.filter(pk=run_id).update(
            tokens_in=F("tokens_in") + tokens_in,
            tokens_out=F("tokens_out") + tokens_out,
            cost_usd=F("cost_usd") + cost,
            latency_s=F("latency_s") + latency,
        )
        run_events_append(run_id=run_id, events=events[run_id])
    _add_to_nodes(nodes)
    for run_id in sorted(runs):
        transaction.on_commit(lambda run_id=run_id: step_request(run_id))  # type: ignore[misc]
    return [attempt.pk for attempt in attempts]


def attempt_finish(*, attempt_id: int, envelope: Envelope) -> bool:
    """Record one envelope (see attempts_finish); False when it was already recorded."""
    return bool(attempts_finish(results=[(attempt_id, envelope)]))
