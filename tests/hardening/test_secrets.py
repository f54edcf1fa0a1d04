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
import re
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.test import Client
from django.urls import reverse
from kombu.messaging import Producer

from providers.scripted_openai import Reply, ScriptedOpenAI, last_user
from studio.api import api
from studio.asgi import application
from studio.crypto import decrypt_secret
from studio.models import (
    Attempt,
    Checkpoint,
    CollectionCell,
    EvaluationRun,
    ModelEndpoint,
    Role,
    Run,
    TrainingJob,
)
from studio.services.tokens import token_create
from tests.factories import UserFactory
from tests.support.runs import wait_for_run
from tests.support.worker import running_worker
from workers.celery import QUEUES

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Not OpenAI's sk- shape: litellm's own log redaction masks those by their shape, but not
# many other providers' keys (Groq's gsk_..., for one), and the studio must not rely on it.
SECRET = f"gsk_hardening{secrets.token_hex(16)}"
ORIGIN = (b"origin", b"http://testserver")
# Every logger the studio or its libraries write to, at DEBUG for the runs.
LOGGERS = [
    "",
    "LiteLLM",
    "LiteLLM Router",
    "LiteLLM Proxy",
    "litellm",
    "httpx",
    "httpcore",
    "openai",
    "celery",
    "kombu",
]
LOGGERS += ["django", "django.request", "studio", "workers", "orchestrator", "channels", "daphne", "uvicorn"]


class Provider:
    """Answers, or fails the way providers do, echoing the request's headers: a 401 when
    told to refuse or asked "fail-401", a 500 when asked "fail-500"."""

    def __init__(self) -> None:
        self.refuse = False

    def __call__(self, body: dict[str, Any]) -> Reply:
        headers = body["_headers"]
        text = last_user(body)
        if self.refuse or "fail-401" in text:
            key = headers.get("authorization", "").removeprefix("Bearer ")
            return Reply(status=401, content=f"Incorrect API key provided: {key}.")
        if "fail-500" in text:
            return Reply(status=500, content=f"Internal error handling request with headers {json.dumps(headers)}")
        return Reply(content="4")


class Leaks:
    """Everything looked at, by where it came from."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}

    def add(self, sink: str, text: str | bytes) -> None:
        value = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        self.seen.setdefault(sink, []).append(value)

    def assert_none(self) -> None:
        leaked = {}
        for sink, texts in self.seen.items():
            for text in texts:
                if SECRET in text:
                    at = text.index(SECRET)
                    leaked[sink] = text[max(0, at - 200) : at + len(SECRET) + 50]
                    break
        assert not leaked, f"the provider key leaked into: {leaked}"


# Capturing what the process writes and sends


class Records(logging.Handler):
    """Every record, as the studio's log handler writes it: with the filters that handler
    has (settings.LOGGING's "console"), raw fields and traceback included."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.texts: list[str] = []  # emit runs under the handler's own lock
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record) + " " + repr(record.__dict__))

    def attach(self) -> None:
        """Listen on the root logger with every logger at DEBUG. Again after a Celery worker
        starts: it sets up Django again, and so logging, which drops this handler."""
        root = logging.getLogger()
        console = [h for h in root.handlers if h.get_name() == "console"]
        assert console, "the root logger has no 'console' handler: settings.LOGGING changed"
        self.filters = list(console[0].filters)
        if self not in root.handlers:
            root.addHandler(self)
        for name in LOGGERS:
            logging.getLogger(name).setLevel(logging.DEBUG)


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


def redis_client() -> Any:  # Any: redis-py's stubs type every reply as bytes | str
    return redis.Redis.from_url(str(settings.REDIS_URL))


def redis_values() -> Iterator[bytes]:
    """Every value in the test's Redis database: queues, cache, channel layer, results."""
    client = redis_client()
    for key in client.scan_iter(count=500):
        kind = client.type(key)
        if kind == b"string":
            yield key + b" " + (client.get(key) or b"")
        elif kind == b"list":
            yield key + b" " + b" ".join(client.lrange(key, 0, -1))
        elif kind == b"hash":
            yield key + b" " + b" ".join(k + b"=" + v for k, v in client.hgetall(key).items())
        elif kind == b"set":
            yield key + b" " + b" ".join(client.smembers(key))
        elif kind == b"zset":
            yield key + b" " + b" ".join(client.zrange(key, 0, -1))


# The API


class Admin:
    def __init__(self) -> None:
        self.user = UserFactory(role=Role.ADMIN, is_staff=True, is_superuser=True)
        self.token = token_create(user=self.user, name="secrets")[1]
        self.client = Client(headers={"Authorization": f"Bearer {self.token}"})
        self.browser = Client()
        self.browser.force_login(self.user)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        kwargs = {"data": json.dumps(body), "content_type": "application/json"} if body is not None else {}
        return getattr(self.client, method)(path, **kwargs)


def get_routes() -> list[str]:
    schema = api.get_openapi_schema()
    return [path for path, item in schema["paths"].items() if "get" in item]


def path_ids() -> dict[str, list[int | str]]:
    """Every id a GET route's path may take, of the rows that exist now."""
    return {
        "pool_id": list(ModelEndpoint.objects.values_list("pool_id", flat=True).distinct()),
        "endpoint_id": list(ModelEndpoint.objects.values_list("pk", flat=True)),
        "primitive_id": list(apps.get_model("studio", "Primitive").objects.values_list("pk", flat=True)),
        "admissibility_id": list(apps.get_model("studio", "Admissibility").objects.values_list("pk", flat=True)),
        "task_id": list(apps.get_model("studio", "Task").objects.values_list("pk", flat=True)),
        "run_id": list(Run.objects.values_list("pk", flat=True)),
        "job_id": list(TrainingJob.objects.values_list("pk", flat=True)),
        "checkpoint_id": list(Checkpoint.objects.values_list("pk", flat=True)),
        "evaluation_id": list(EvaluationRun.objects.values_list("pk", flat=True)),
        "collection_id": list(apps.get_model("studio", "Collection").objects.values_list("pk", flat=True)),
    }


def concrete_paths(template: str, ids: dict[str, list[int | str]]) -> list[str]:
    names = re.findall(r"\{(\w+)\}", template)
    if not names:
        return [template]
    assert len(names) == 1, f"{template}: fill more than one path parameter here"
    assert ids.get(names[0]), f"{template}: no {names[0]} to read; create one in the test"
    return [template.replace(f"{{{names[0]}}}", str(value)) for value in ids[names[0]]]


def plant_key(admin_api: Admin, server: ScriptedOpenAI, leaks: Leaks) -> dict[str, int]:
    """A pool whose one endpoint holds SECRET, through the API; every response is kept."""
    pool = admin_api.call("post", "/api/pools", {"name": "secret-pool"})
    primitive = admin_api.call("post", "/api/primitives", {"name": "direct"})
    endpoint_body = {"name": "scripted", "model": "openai/scripted", "api_base": server.base_url, "api_key": SECRET}
    endpoint = admin_api.call("post", f"/api/pools/{pool.json()['id']}/endpoints", endpoint_body)
    assert endpoint.status_code == 201, endpoint.content
    endpoint_id = endpoint.json()["id"]
    allowed = {"endpoint_id": endpoint_id, "primitive_id": primitive.json()["id"]}
    assert admin_api.call("post", "/api/admissibility", allowed).status_code == 201
    # A key in a write that fails (invalid input; a name taken) is not echoed back either.
    refusals = [
        admin_api.call("post", f"/api/pools/{pool.json()['id']}/endpoints", {**endpoint_body, "context_window": 0}),
        admin_api.call("post", f"/api/pools/{pool.json()['id']}/endpoints", endpoint_body),
        admin_api.call("patch", f"/api/endpoints/{endpoint_id}", {"api_key": SECRET, "context_window": "many"}),
        admin_api.call("post", f"/api/pools/{pool.json()['id']}/endpoints", {**endpoint_body, "api_key": 7}),
    ]
    assert [r.status_code for r in refusals] == [422, 409, 422, 422]
    updated = admin_api.call("patch", f"/api/endpoints/{endpoint_id}", {"api_key": SECRET, "enabled": True})
    assert updated.status_code == 200 and updated.json()["has_api_key"] is True
    for response in [pool, primitive, endpoint, updated, *refusals]:
        leaks.add("API write responses", response.content)
    # Stored encrypted: the column holds a Fernet token, not the key.
    stored = ModelEndpoint.objects.get(pk=endpoint_id).api_key_encrypted
    assert SECRET not in stored and decrypt_secret(stored) == SECRET
    return {"pool_id": pool.json()["id"], "endpoint_id": endpoint_id}


def collect_on(admin_api: Admin, planted: dict[str, int], leaks: Leaks) -> int:
    """A collection of two scored tasks over the pool, through the API, waited on; its id.
    Its failed cell keeps the provider's error, which echoes the key."""
    tasks = [
        admin_api.call("post", "/api/tasks", {"text": text, "gold_answer": gold, "checker": "gsm8k", "domain": "math"})
        for text, gold in (("What is 2+2?", "4"), ("fail-500: What is 1+1?", "2"))
    ]
    body = {"pool_id": planted["pool_id"], "task_ids": [t.json()["id"] for t in tasks], "budget_usd": 1,
            "pairs": [{"endpoint_id": planted["endpoint_id"], "primitive": "direct"}]}  # fmt: skip
    made = admin_api.call("post", "/api/collections", body)
    assert made.status_code == 201, made.content
    collection_id = int(made.json()["id"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        row = admin_api.client.get(f"/api/collections/{collection_id}")
        if row.json()["status"] not in ("queued", "running"):
            break
        time.sleep(0.2)
    assert row.json()["status"] == "succeeded", row.content
    for response in [*tasks, made, row]:
        leaks.add("API write responses", response.content)
    return collection_id


def start_run(admin_api: Admin, pool_id: int, text: str = "", task_id: int | None = None) -> int:
    if task_id is None:
        task_id = admin_api.call("post", "/api/tasks", {"text": text}).json()["id"]
    run = admin_api.call("post", "/api/runs", {"task_id": task_id, "pool_id": pool_id})
    assert run.status_code == 201, run.content
    return int(run.json()["id"])


async def ws_events(path: str, headers: list[tuple[bytes, bytes]]) -> list[str]:
    ws = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await ws.connect(timeout=5)
    assert connected
    messages = []
    while not await ws.receive_nothing(timeout=0.3):
        messages.append(await ws.receive_from())
    await ws.disconnect()
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
