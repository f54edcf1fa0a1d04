"""A run's trace in a real Phoenix (arize-phoenix, `make phoenix`), started here on loopback:
a run of the scripted OpenAI-compatible server through a real Celery worker is exported over
OTLP once it ends, and read back from Phoenix's REST API: the run → node → model call tree,
and the call's GenAI attributes (model, tokens) and cost. Without an OTLP endpoint nothing is
built. A run ended by a cancel, and one answered on /v1's fast path, are traced as well."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import OpenAI

from providers.scripted_openai import Reply, ScriptedOpenAI
from studio import tracing
from studio.models import Attempt
from studio.services.runs import run_cancel, run_create
from studio.services.tasks import task_create
from studio.services.tokens import token_create
from tests.factories import UserFactory
from tests.integration.test_openai_compat import scripted_pool
from tests.support.asgi import asgi_server as live_asgi_server
from tests.support.runs import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = Path(os.environ.get("ORCHESTRA_PHOENIX", ROOT / ".venv-phoenix" / "bin" / "phoenix"))


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert PHOENIX.exists(), f"{PHOENIX} is missing: `make phoenix` installs Phoenix"
    port, grpc = free_port(), free_port()
    workdir = tmp_path_factory.mktemp("phoenix")
    env = {**os.environ, "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc),
           "PHOENIX_WORKING_DIR": str(workdir), "PHOENIX_TELEMETRY_ENABLED": "false"}  # fmt: skip
    log = (workdir / "phoenix.log").open("wb")
    process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert process.poll() is None, (workdir / "phoenix.log").read_text()[-2000:]
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("Phoenix did not answer within 120 s")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def spans_of(url: str, run_id: int, want: int) -> list[dict[str, Any]]:
    """The spans of the run's trace, once Phoenix holds `want` of them (it ingests in the background)."""
    deadline = time.monotonic() + 30
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        reply = httpx.get(f"{url}/v1/projects/default/spans", params={"limit": 1000}, timeout=10)
        reply.raise_for_status()
        everything = reply.json()["data"]
        root = next((s for s in everything if s["name"] == f"run {run_id}"), None)
        if root is not None:
            found = [s for s in everything if s["context"]["trace_id"] == root["context"]["trace_id"]]
            if len(found) >= want:
                return found
        time.sleep(0.5)
    raise AssertionError(f"Phoenix holds {len(found)} of the {want} spans of run {run_id}")


def test_a_runs_trace_reaches_phoenix_as_a_tree_with_tokens_and_cost(
    phoenix: str, celery_worker: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "orchestra-test")
    with ScriptedOpenAI(lambda body: Reply(content="42", prompt_tokens=12, completion_tokens=3)) as server:
        pool = scripted_pool(server)
        user = UserFactory()
        task = task_create(owner=user, text="What is 6*7?")
        run = wait_for_run(run_create(owner=user, task_id=task.pk, pool_id=pool.pk, preset="cheap").pk, 60)
    assert run.status == "succeeded"
    attempt = Attempt.objects.get(node__run=run)
    flushed()
    spans = spans_of(phoenix, run.pk, want=3)
    by_name = {span["name"]: span for span in spans}
    root, node, call = by_name[f"run {run.pk}"], by_name["node root"], by_name["chat openai/scripted"]
    assert root["parent_id"] is None
    assert node["parent_id"] == root["context"]["span_id"]
    assert call["parent_id"] == node["context"]["span_id"]
    attributes = call["attributes"]
    assert attributes["gen_ai.request.model"] == "openai/scripted"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (12, 3)
    assert attributes["orchestra.cost_usd"] == pytest.approx(float(attempt.cost_usd)) and attempt.cost_usd > 0
    assert call["span_kind"] == "LLM" and attributes["orchestra.primitive"] == "direct"  # Phoenix reads the kind
    assert root["attributes"]["orchestra.run.status"] == "succeeded"
    assert root["attributes"]["orchestra.cost_usd"] == pytest.approx(float(run.cost_usd))
    assert root["start_time"] <= call["start_time"] <= call["end_time"] <= root["end_time"]


def flushed() -> None:
    deadline = time.monotonic() + 10  # a worker thread exports after its commit; then send what waits
    while not tracing.flush() and time.monotonic() < deadline:
        time.sleep(0.1)


def test_a_cancelled_run_and_a_fast_path_run_are_traced_too(
    phoenix: str, celery_worker: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)
    user = UserFactory()

    def script(body: dict[str, Any]) -> Reply:
        return Reply(content="42", delay_s=3.0 if "slow" in str(body["messages"]) else 0.0)

    with ScriptedOpenAI(script) as server:
        pool = scripted_pool(server)
        task = task_create(owner=user, text="slow")
        run = run_create(owner=user, task_id=task.pk, pool_id=pool.pk)
        deadline = time.monotonic() + 20
        while not Attempt.objects.filter(node__run=run, status="running").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        run_cancel(user=user, run_id=run.pk)
        with live_asgi_server() as url:
            token = token_create(user=user, name="trace")[1]
            client = OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0, timeout=30)
            raw = client.chat.completions.with_raw_response.create(
                model="orchestra", messages=[{"role": "user", "content": "quick"}], extra_body={"pool": pool.pk}
            )
        fast = wait_for_run(int(raw.headers["x-orchestra-run-id"]))
    flushed()
    (cancelled,) = [s for s in spans_of(phoenix, run.pk, want=1) if s["name"] == f"run {run.pk}"]
    assert cancelled["attributes"]["orchestra.run.status"] == "cancelled"
    names = {span["name"] for span in spans_of(phoenix, fast.pk, want=3)}
    assert names == {f"run {fast.pk}", "node root", "chat openai/scripted"}


def test_without_an_endpoint_nothing_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in tracing.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tracing, "_export", lambda run_id: pytest.fail("exported with tracing off"))
    assert not tracing.enabled()
    tracing.trace_run(1)
    assert tracing.enabled({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"})
