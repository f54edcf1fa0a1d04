"""Running one attempt: claim it, then record its envelope exactly once."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from orchestrator.envelope import Envelope
from studio.crypto import decrypt_secret
from studio.models import Attempt, AttemptStatus, Node, Run
from studio.services.events import run_event_append
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


def _price(value: Decimal | None) -> float | None:
    return float(value) if value is not None else None


@transaction.atomic
def attempt_start(*, attempt_id: int) -> AttemptWork | None:
    """Claim an attempt to run. None when it is gone or already finished (a redelivered
    task then neither runs nor bills it again)."""
    attempt = (
        Attempt.objects.select_for_update(of=("self",))
        .select_related("endpoint", "primitive", "node")
        .filter(pk=attempt_id)
        .first()
    )
    if attempt is None:
        log.warning("attempt %s no longer exists; nothing to run", attempt_id)
        return None
    if attempt.status in FINISHED:
        log.info("attempt %s already finished (%s); not running it again", attempt_id, attempt.status)
        return None
    attempt.status = AttemptStatus.RUNNING
    attempt.started_at = timezone.now()
    attempt.save(update_fields=["status", "started_at"])
    endpoint = attempt.endpoint
    request = {"prompt": attempt.node.text, **attempt.request}
    return AttemptWork(
        attempt_id=attempt.pk,
        model=endpoint.model,
        api_base=endpoint.api_base,
        api_key=decrypt_secret(endpoint.api_key_encrypted) if endpoint.api_key_encrypted else None,
        input_cost_per_mtok=_price(endpoint.input_cost_per_mtok),
        output_cost_per_mtok=_price(endpoint.output_cost_per_mtok),
        primitive=attempt.primitive.name,
        params={**attempt.primitive.parameters, **attempt.request.get("params", {})},
        request=request,
    )


@transaction.atomic
def attempt_finish(*, attempt_id: int, envelope: Envelope) -> bool:
    """Record the envelope and bill it to the node and the run, unless another delivery
    of the same attempt already did (then return False and change nothing)."""
    attempt = Attempt.objects.select_for_update(of=("self",)).select_related("node").filter(pk=attempt_id).first()
    if attempt is None or attempt.status in FINISHED:
        return False
    cost = Decimal(repr(envelope.cost_usd))
    attempt.status = AttemptStatus(envelope.status)
    attempt.envelope = envelope.to_dict()
    attempt.tokens_in, attempt.tokens_out = envelope.tokens_in, envelope.tokens_out
    attempt.cost_usd, attempt.latency_s = cost, envelope.latency_s
    attempt.error_kind = envelope.error_kind or ""
    attempt.error_message = envelope.error_message or ""
    attempt.finished_at = timezone.now()
    attempt.save()
    totals = {
        "tokens_in": F("tokens_in") + envelope.tokens_in,
        "tokens_out": F("tokens_out") + envelope.tokens_out,
        "cost_usd": F("cost_usd") + cost,
        "latency_s": F("latency_s") + envelope.latency_s,
    }
    Node.objects.filter(pk=attempt.node_id).update(**totals)
    Run.objects.filter(pk=attempt.node.run_id).update(**totals)
    run_event_append(
        run_id=attempt.node.run_id,
        type="attempt.finished",
        payload={
            "attempt": attempt.pk,
            "node": attempt.node.key,
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
    run_id = attempt.node.run_id
    transaction.on_commit(lambda: step_request(run_id))
    return True
