"""`GET /metrics`: the studio in Prometheus's text format, for operators' dashboards.

Read from the database at each scrape (`studio.selectors.metrics`): runs and attempts by
status, each model's calls, dollars, tokens and call latency, the latency of ended runs, and
the messages waiting in each Celery queue. Allowed from the addresses of
`ORCHESTRA_METRICS_ALLOW` (default: loopback only), or from anywhere with
`Authorization: Bearer $ORCHESTRA_METRICS_TOKEN`; anything else is a 403.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from studio.queues import queue_depths
from studio.selectors import metrics as read
from studio.services.throttle import client_ip


class StudioCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        runs = GaugeMetricFamily("orchestra_runs", "Runs by status.", labels=["status"])
        for status, n in sorted(read.run_counts().items()):
            runs.add_metric([status], n)
        yield runs
        attempts = GaugeMetricFamily("orchestra_attempts", "Attempts (model calls) by status.", labels=["status"])
        for status, n in sorted(read.attempt_counts().items()):
            attempts.add_metric([status], n)
        yield attempts
        latency = read.run_latency()
        yield _histogram("orchestra_run_latency_seconds", "Latency of ended runs.", [], [], latency)

        calls = CounterMetricFamily(
            "orchestra_model_calls", "Attempts by endpoint model and status.", labels=["model", "status"]
        )
        cost = CounterMetricFamily("orchestra_model_cost_usd", "Dollars spent, by endpoint model.", labels=["model"])
        tokens = CounterMetricFamily(
            "orchestra_model_tokens", "Tokens by endpoint model, in and out.", labels=["model", "direction"]
        )
        usage = read.model_usage()
        for model in usage:
            for status, n in sorted(model.calls.items()):
                calls.add_metric([model.model, status], n)
            cost.add_metric([model.model], model.cost_usd)
            tokens.add_metric([model.model, "in"], model.tokens_in)
            tokens.add_metric([model.model, "out"], model.tokens_out)
        yield from (calls, cost, tokens)
        call_latency = HistogramMetricFamily(
            "orchestra_model_call_latency_seconds", "Latency of ended attempts, by endpoint model.", labels=["model"]
        )
        for model in usage:
            _add(call_latency, [model.model], model.latency)
        yield call_latency

        depths = queue_depths()
        up = GaugeMetricFamily("orchestra_broker_up", "1 when the Celery broker answered this scrape.")
        up.add_metric([], 0 if depths is None else 1)
        yield up
        queued = GaugeMetricFamily("orchestra_queue_messages", "Messages waiting in a Celery queue.", labels=["queue"])
        for queue, n in sorted((depths or {}).items()):
            queued.add_metric([queue], n)
        yield queued


def _add(family: HistogramMetricFamily, labels: list[str], histogram: read.Histogram) -> None:
    buckets = [("+Inf" if bound == float("inf") else repr(bound), count) for bound, count in histogram.buckets]
    family.add_metric(labels, buckets, histogram.total)


def _histogram(name: str, doc: str, label_names: list[str], labels: list[str], histogram: read.Histogram) -> Metric:
    family = HistogramMetricFamily(name, doc, labels=label_names)
    _add(family, labels, histogram)
    return family


REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(StudioCollector())


def allowed(request: HttpRequest) -> bool:
    """A bearer token equal to ORCHESTRA_METRICS_TOKEN, or an address ORCHESTRA_METRICS_ALLOW names."""
    token = settings.ORCHESTRA_METRICS_TOKEN
    given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if token and given and hmac.compare_digest(given.encode(), token.encode()):
        return True
    try:
        address = ipaddress.ip_address(client_ip(request))
    except ValueError:
        return False
    return any(address in network for network in settings.ORCHESTRA_METRICS_ALLOW)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        return HttpResponse(
            "403: /metrics is allowed from ORCHESTRA_METRICS_ALLOW's addresses or with ORCHESTRA_METRICS_TOKEN.\n",
            status=403, content_type="text/plain; charset=utf-8",
        )  # fmt: skip
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
