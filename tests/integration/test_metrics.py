"""`GET /metrics` on a live server after a load run through /v1: it parses with
prometheus_client's own parser, and what it reports equals the database (runs and attempts by
status, each model's calls, dollars and tokens, the run latency histogram's count); the queues
are read from the real broker. Who may read it: loopback, ORCHESTRA_METRICS_ALLOW, the token."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import httpx
import openai
import pytest
from django.db.models import Count, Sum
from django.test import Client, override_settings
from openai import OpenAI
from prometheus_client.parser import text_string_to_metric_families

from providers.scripted_openai import Reply, ScriptedOpenAI
from studio.models import Attempt, Run
from studio.services.tokens import token_create
from studio.settings.env import metrics_networks
from tests.factories import UserFactory
from tests.integration.test_openai_compat import scripted_pool

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value, from the exposition text."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_metrics_after_a_load_run_equal_the_database(asgi_server: str, celery_worker: object) -> None:
    user = UserFactory()
    token = token_create(user=user, name="load")[1]
    with (
        ScriptedOpenAI(lambda body: Reply(content="42", prompt_tokens=12, completion_tokens=3)) as good,
        ScriptedOpenAI(lambda body: Reply(status=400, content="no such thing")) as bad,
    ):
        pools = [scripted_pool(good, "good"), scripted_pool(bad, "bad")]
        client = OpenAI(base_url=f"{asgi_server}/v1", api_key=token, max_retries=0, timeout=60)

        def chat(i: int) -> str:
            pool = pools[0] if i % 4 else pools[1]  # one in four fails at the provider
            try:
                client.chat.completions.create(
                    model="orchestra", messages=[{"role": "user", "content": f"What is {i}*7?"}],
                    extra_body={"pool": pool.name, "preset": "cheap"},
                )  # fmt: skip
                return "ok"
            except openai.APIStatusError as error:
                return str(error.status_code)

        with ThreadPoolExecutor(8) as workers:
            results = list(workers.map(chat, range(24)))
    assert results.count("ok") == 18 and results.count("502") == 6

    reply = httpx.get(f"{asgi_server}/metrics", timeout=30)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain; version=")
    got = samples(reply.text)

    runs = dict(Run.objects.values_list("status").annotate(n=Count("pk")))
    assert runs == {"succeeded": 18, "failed": 6}
    for status, n in runs.items():
        assert got[("orchestra_runs", (("status", status),))] == n
    attempts = dict(Attempt.objects.values_list("status").annotate(n=Count("pk")))
    for status, n in attempts.items():
        assert got[("orchestra_attempts", (("status", status),))] == n
    per_model = Attempt.objects.values("endpoint__model").annotate(
        cost=Sum("cost_usd"), tin=Sum("tokens_in"), tout=Sum("tokens_out"), n=Count("pk")
    )
    assert len(per_model) == 1  # both pools' endpoints are openai/scripted
    for row in per_model:
        model = (("model", row["endpoint__model"]),)
        assert Decimal(str(got[("orchestra_model_cost_usd_total", model)])) == pytest.approx(row["cost"])
        assert row["cost"] > 0
        assert got[("orchestra_model_tokens_total", (("direction", "in"), *model))] == row["tin"] == 18 * 12
        assert got[("orchestra_model_tokens_total", (("direction", "out"), *model))] == row["tout"] == 18 * 3
        calls = sum(v for (name, labels), v in got.items() if name == "orchestra_model_calls_total")
        assert calls == row["n"]
        assert got[("orchestra_model_call_latency_seconds_count", model)] == row["n"]
    assert got[("orchestra_run_latency_seconds_count", ())] == 24
    assert got[("orchestra_run_latency_seconds_bucket", (("le", "+Inf"),))] == 24
    assert got[("orchestra_broker_up", ())] == 1
    queues = {dict(labels)["queue"] for name, labels in got if name == "orchestra_queue_messages"}
    assert queues == {"orchestrator", "workers", "training"}


def test_only_allowed_addresses_or_the_token_read_metrics(db: None) -> None:
    elsewhere = Client(REMOTE_ADDR="10.1.2.3")
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200
    refused = elsewhere.get("/metrics")
    assert refused.status_code == 403 and b"ORCHESTRA_METRICS_TOKEN" in refused.content
    with override_settings(ORCHESTRA_METRICS_TOKEN="s3cret", ORCHESTRA_METRICS_ALLOW=metrics_networks("10.1.0.0/16")):
        assert elsewhere.get("/metrics").status_code == 200  # the network is allowed now
        other = Client(REMOTE_ADDR="192.0.2.7")
        assert other.get("/metrics").status_code == 403
        assert other.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 403
        assert other.get("/metrics", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert Client(REMOTE_ADDR="127.0.0.1").post("/metrics").status_code == 405


def test_a_bad_allow_list_is_named() -> None:
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="'10.0.0.300' is not an address"):
        metrics_networks("127.0.0.1, 10.0.0.300")
    assert [str(n) for n in metrics_networks(" 127.0.0.1 ,::1,")] == ["127.0.0.1/32", "::1/128"]
