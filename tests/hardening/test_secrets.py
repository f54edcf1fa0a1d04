"""A provider API key never leaves the studio but towards its provider (issue 8, part 5).

An admin plants a key on an endpoint through the API. Runs then go through a real Celery
worker against the scripted OpenAI-compatible server, which echoes the request's
Authorization header in its error messages, as providers do (OpenAI's 401 names the key).
Then the key is looked for everywhere a person or a process could read it: every API
response an admin can get, the studio's pages and the Django admin, run events (API and
WebSocket), the OpenAI-compatible endpoint's errors, the JSONL export, every log record
(all loggers at DEBUG, litellm's included) and everything printed, the Celery messages
(as published, and as they sit on the Redis queue), Redis itself and the database.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.apps import apps
from django.contrib import admin
from django.urls import reverse
from kombu.messaging import Producer

from providers.scripted_openai import ScriptedOpenAI
from studio.models import (
    Attempt,
    Checkpoint,
    CollectionCell,
    EvaluationRun,
    Run,
    TrainingJob,
)
from tests.hardening.secrets_world import (
    LOGGERS,
    ORIGIN,
    SECRET,
    Admin,
    Leaks,
    Provider,
    Records,
    collect_on,
    concrete_paths,
    get_routes,
    path_ids,
    plant_key,
    redis_values,
    start_run,
    ws_events,
)
from tests.support.runs import wait_for_run
from tests.support.worker import running_worker
from workers.celery import QUEUES

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def log_records() -> Iterator[Records]:
    handler = Records()
    levels = {name: logging.getLogger(name).level for name in LOGGERS}
    handler.attach()
    try:
        yield handler
    finally:
        logging.getLogger().removeHandler(handler)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The serialized body, headers and properties of every message published to the broker."""
    messages: list[str] = []
    original = Producer._publish

    def publish(self: Producer, body: Any, priority: Any, content_type: Any, content_encoding: Any,
                headers: Any, properties: Any, *args: Any, **kwargs: Any) -> Any:  # fmt: skip
        raw = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        messages.append(f"{raw} {headers!r} {properties!r} {args!r} {kwargs!r}")
        return original(self, body, priority, content_type, content_encoding, headers, properties, *args, **kwargs)

    monkeypatch.setattr(Producer, "_publish", publish)
    return messages


def test_a_provider_key_appears_nowhere(
    log_records: Records, published: list[str], capfd: pytest.CaptureFixture[str], settings: Any
) -> None:
    settings.ORCHESTRA_PROVIDER_MAX_RETRIES = 0  # each failure once: faster, same messages
    leaks = Leaks()
    admin_api = Admin()
    provider = Provider()
    with ScriptedOpenAI(provider) as server:
        planted = plant_key(admin_api, server, leaks)
        pool_id = planted["pool_id"]

        # Published while no worker runs: the message waits on the Redis queue, as sent.
        first = start_run(admin_api, pool_id, "What is 2+2?")
        queued = [value for value in redis_values() if any(value.startswith(q.encode() + b" ") for q in QUEUES)]
        assert any(b"workers.run_step" in value for value in queued), "the run's first step was not on a queue"
        for value in queued:
            leaks.add("Celery messages on the Redis queues", value)

        with running_worker(concurrency=4):
            log_records.attach()
            assert wait_for_run(first, timeout=60).status == "succeeded"
            provider.refuse = True  # the same task again, now refused: a pair to export
            refused = start_run(admin_api, pool_id, task_id=Run.objects.get(pk=first).task_id)
            assert wait_for_run(refused, timeout=60).status == "failed"
            provider.refuse = False
            failed = start_run(admin_api, pool_id, "fail-500: What is 3+3?")
            assert wait_for_run(failed, timeout=60).status == "failed"
            collected = collect_on(admin_api, planted, leaks)  # the worker runs it: one cell right, one failed
            assert sorted(CollectionCell.objects.filter(collection_id=collected).values_list("status", flat=True)) == [
                "failed",
                "recorded",
            ]
            # The OpenAI-compatible endpoint reports a failed run's reason.
            chat = {"model": "orchestra", "pool": pool_id, "messages": [{"role": "user", "content": "fail-401: 1+1?"}]}
            v1 = admin_api.client.post("/v1/chat/completions", json.dumps(chat), content_type="application/json")
            assert v1.status_code == 502, v1.content
            wait_for_run(int(v1["x-orchestra-run-id"]), timeout=60)  # written after the answer: its rows are read below
            leaks.add("/v1 responses", v1.content)
            leaks.add("/v1 responses", admin_api.client.get("/v1/models").content)

    # The key did reach the provider, and the provider's errors did come back: so the
    # checks below look at sinks that carried the error, not at empty ones.
    assert any(r["_headers"].get("authorization") == f"Bearer {SECRET}" for r in server.requests)
    auth_errors = Attempt.objects.filter(error_kind="auth")
    assert auth_errors.exists() and all("Incorrect API key provided" in a.error_message for a in auth_errors)
    assert Attempt.objects.filter(error_kind="server_error").exclude(error_message="").exists()

    # The JSONL export of a pair of them.
    pair = {"run_a_id": first, "run_b_id": refused, "metadata": {"preferred": "a"}}
    assert admin_api.call("post", "/api/preferences/pairs", pair).status_code == 201
    export = admin_api.client.get("/api/preferences/export")
    assert export.status_code == 200 and export["X-Orchestra-Exported"] == "1"
    leaks.add("JSONL export", export.content)

    # Every GET route of the API, for every row it can show.
    TrainingJob.objects.create(kind="policy", message="placeholder")
    Checkpoint.objects.create(kind="policy", name="placeholder", path="none.pt")
    EvaluationRun.objects.create(message="placeholder")
    ids_now = path_ids()
    for template in get_routes():
        for path in concrete_paths(template, ids_now):
            response = admin_api.client.get(path)
            assert response.status_code in {200, 503}, (path, response.status_code)
            leaks.add(f"GET {template}", response.content)
    for run_id in ids_now["run_id"]:
        page = admin_api.client.get(f"/api/runs/{run_id}/events?limit=1000").json()
        assert page["items"], f"run {run_id} has no events"

    # The pages: the SPA, and every Django admin list and change page.
    for path in ["/", f"/runs/{refused}", "/admin/"]:
        leaks.add("pages", admin_api.browser.get(path).content)
    for model in admin.site._registry:
        meta = model._meta
        leaks.add(
            "admin pages",
            admin_api.browser.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")).content,
        )
        for pk in model._default_manager.values_list("pk", flat=True)[:20]:
            page = admin_api.browser.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[pk]))
            assert page.status_code == 200
            leaks.add("admin pages", page.content)

    # Run events on the WebSocket.
    cookie = (b"cookie", f"sessionid={admin_api.browser.cookies['sessionid'].value}".encode())
    for run_id in ids_now["run_id"]:
        messages = async_to_sync(ws_events)(f"/ws/runs/{run_id}/", [ORIGIN, cookie])
        assert messages
        leaks.add("WebSocket events", "\n".join(messages))

    # What the process logged, printed, sent to the broker, and left in Redis and Postgres.
    # litellm logged at DEBUG, and the provider's echoed 401 reached the log: the log was looked at.
    assert any(text.startswith("LiteLLM DEBUG") for text in log_records.texts)
    assert any("Incorrect API key provided" in text for text in log_records.texts)
    assert published
    assert any("workers.execute_attempt" in m for m in published), "no attempt message was captured"
    leaks.add("log records", "\n".join(log_records.texts))
    out, err = capfd.readouterr()
    leaks.add("stdout and stderr", out + err)
    leaks.add("Celery messages as published", "\n".join(published))
    for value in redis_values():
        leaks.add("Redis", value)
    for model in apps.get_app_config("studio").get_models():
        rows = list(model._default_manager.values())
        for row in rows:
            row.pop("api_key_encrypted", None)
        leaks.add(f"table {model._meta.db_table}", json.dumps(rows, default=str))

    leaks.assert_none()


def test_a_logged_traceback_or_message_holds_no_key(log_records: Records) -> None:
    """The log filter itself, on what the end-to-end run above does not produce: a key in an
    exception's traceback and in a message's arguments, logged by any logger."""
    from studio.crypto import encrypt_secret

    key = f"plain{secrets.token_hex(12)}"
    encrypt_secret(key)  # as the API does when an admin sets the key
    log = logging.getLogger("workers.execution")
    try:
        raise RuntimeError(f"provider said: bad key {key}")
    except RuntimeError:
        log.exception("attempt %s failed with key %s", 7, key)
    logging.getLogger("LiteLLM").debug("request headers: %s", {"authorization": f"Bearer {key}"})

    texts = "\n".join(log_records.texts)
    assert "attempt 7 failed with key [redacted]" in texts and "bad key [redacted]" in texts
    assert key not in texts
