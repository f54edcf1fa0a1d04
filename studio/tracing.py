"""OpenTelemetry traces of runs: a run → its nodes → their attempts, each model call with the
GenAI semantic conventions (model, tokens) and its cost, exported over OTLP (HTTP/protobuf).

On when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, off
otherwise: then nothing is built. A run's trace is written once the run has ended, from its
rows (each span keeps the times the database recorded), by the process that ended it, after
the commit; spans leave in the background (a batch processor), so a slow collector never
holds a run. The service is `OTEL_SERVICE_NAME` (default `orchestra`). Attributes also follow
OpenInference's names (`openinference.span.kind`, `llm.model_name`, `llm.token_count.*`),
which Phoenix shows.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from studio.models import Attempt, Node, Run

log = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_lock = threading.Lock()
_provider: tuple[int, Any] | None = None  # (pid, TracerProvider): a forked worker makes its own


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    return any(environ.get(name) for name in ENDPOINT_VARIABLES)


def provider() -> Any:
    """This process's tracer provider, made on first use (the exporter reads the OTEL_* variables)."""
    global _provider
    with _lock:
        if _provider is None or _provider[0] != os.getpid():
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            made = TracerProvider(
                resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "orchestra")})
            )
            made.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            _provider = (os.getpid(), made)
        return _provider[1]


def flush(timeout_ms: int = 5000) -> bool:
    """Send the spans waiting in this process (tests; shutdown)."""
    return bool(_provider is not None and _provider[1].force_flush(timeout_ms))


def _ns(moment: datetime | None, fallback: datetime) -> int:
    return int((moment or fallback).timestamp() * 1e9)


def trace_run(run_id: int) -> None:
    """Export the ended run's trace; never raises (a trace is worth less than the run)."""
    if not enabled():
        return
    try:
        _export(run_id)
    except Exception:
        log.exception("the trace of run %s could not be exported", run_id)


def _export(run_id: int) -> None:
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    run = Run.objects.select_related("pool", "task").get(pk=run_id)
    nodes = list(Node.objects.filter(run_id=run_id).order_by("depth", "id"))
    attempts = list(
        Attempt.objects.filter(node__run_id=run_id)
        .select_related("endpoint", "primitive")
        .order_by("node_id", "number")
    )
    tracer = provider().get_tracer("orchestra.runs")
    begun = run.started_at or run.created_at
    ended = run.finished_at or begun
    root = tracer.start_span(
        f"run {run.pk}", start_time=_ns(begun, run.created_at),
        attributes={
            "openinference.span.kind": "CHAIN", "orchestra.run.id": run.pk, "orchestra.run.status": run.status,
            "orchestra.policy": run.policy, "orchestra.pool": run.pool.name if run.pool else "",
            "orchestra.cost_usd": float(run.cost_usd), "gen_ai.usage.input_tokens": run.tokens_in,
            "gen_ai.usage.output_tokens": run.tokens_out, "input.value": run.task.text[:4000],
            "output.value": run.final_answer[:4000],
        },
    )  # fmt: skip
    spans: dict[int, Any] = {}
    for node in nodes:
        parent = spans.get(node.parent_id) if node.parent_id else None
        context = trace.set_span_in_context(parent or root)
        spans[node.pk] = tracer.start_span(
            f"node {node.key}", context=context, start_time=_ns(node.created_at, begun),
            attributes={
                "openinference.span.kind": "CHAIN", "orchestra.node.key": node.key, "orchestra.node.kind": node.kind,
                "orchestra.node.status": node.status, "orchestra.node.depth": node.depth,
                "orchestra.cost_usd": float(node.cost_usd), "input.value": node.text[:4000],
                "output.value": node.answer[:4000],
            },
        )  # fmt: skip
    for attempt in attempts:
        model = attempt.endpoint.model
        provider_name, _, _ = model.partition("/")
        span = tracer.start_span(
            f"chat {model}", context=trace.set_span_in_context(spans[attempt.node_id]),
            start_time=_ns(attempt.started_at or attempt.created_at, begun),
            attributes={
                "openinference.span.kind": "LLM", "gen_ai.operation.name": "chat", "gen_ai.system": provider_name,
                "gen_ai.provider.name": provider_name, "gen_ai.request.model": model, "gen_ai.response.model": model,
                "gen_ai.usage.input_tokens": attempt.tokens_in, "gen_ai.usage.output_tokens": attempt.tokens_out,
                "llm.model_name": model, "llm.token_count.prompt": attempt.tokens_in,
                "llm.token_count.completion": attempt.tokens_out,
                "llm.token_count.total": attempt.tokens_in + attempt.tokens_out,
                "orchestra.cost_usd": float(attempt.cost_usd), "orchestra.primitive": attempt.primitive.name,
                "orchestra.attempt.number": attempt.number, "orchestra.attempt.status": attempt.status,
            },
        )  # fmt: skip
        if attempt.status != "ok":
            span.set_status(Status(StatusCode.ERROR, attempt.error_message[:500] or attempt.status))
        span.end(end_time=_ns(attempt.finished_at, attempt.started_at or attempt.created_at))
    for node in reversed(nodes):
        if node.status == "failed":
            spans[node.pk].set_status(Status(StatusCode.ERROR, "the node failed"))
        spans[node.pk].end(end_time=_ns(node.updated_at, ended))
    if run.status != "succeeded":
        root.set_status(Status(StatusCode.ERROR, run.end_reason[:500] or run.status))
    root.end(end_time=_ns(ended, begun))
