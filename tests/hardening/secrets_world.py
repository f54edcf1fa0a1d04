"""What the key-leak test (test_secrets.py) works with: the planted secret, a provider that
echoes the Authorization header in its errors as real ones do, where leaks are gathered, every
log record caught, Redis read through, an admin's API calls, every route with real ids, and
the steps that plant the key, collect on it and start runs."""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from collections.abc import Iterator
from typing import Any

import redis
from channels.testing import WebsocketCommunicator
from django.apps import apps
from django.conf import settings
from django.test import Client

from providers.scripted_openai import Reply, ScriptedOpenAI, last_user
from studio.api import api
from studio.asgi import application
from studio.crypto import decrypt_secret
from studio.models import (
    Checkpoint,
    EvaluationRun,
    ModelEndpoint,
    Role,
    Run,
    TrainingJob,
)
from studio.services.tokens import token_create
from tests.factories import UserFactory

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
