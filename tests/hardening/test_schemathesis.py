"""Schemathesis against the API: no generated request, valid or not, gets a server error.

/api/ is fuzzed from its own OpenAPI schema (ninja's); /v1/ from the fragment below, built
from the endpoint's own pydantic model (it is not a ninja router). Every operation gets
cases in three groups: positive (what the schema allows, so the services are reached),
negative (what it forbids, NUL characters included) and positive with the path ids of real
rows (so that updates, labels, re-runs and the like reach a row). The caller is an admin
with a bearer token, past authentication and CSRF. Each case runs in a savepoint rolled
back after it. GET /api/health is left out (SKIPPED).

Each answer must be below 500 with no exception raised in the view, carry no traceback,
and be an error of the documented shape when it is a 4xx: `{"detail": ...}` on /api/,
OpenAI's `{"error": {...}}` on /v1/. The figures are printed (`-s` shows them).
Examples are derandomized, so a run is repeatable. ORCHESTRA_FUZZ_EXAMPLES sets the
examples per operation and group (bench/fuzz_api.py runs more).

Nothing runs a Celery worker: the tasks a request enqueues are sent on commit, and a test
transaction never commits. /v1/chat/completions waits for its run to end; here a stand-in
for the worker ends the run at once, and one for the executor answers a fast-path call at once
(`finish_at_once`), so an accepted request answers 200.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
import schemathesis
from django.db import transaction
from django.test import Client
from django.urls import Resolver404, resolve
from django.utils import timezone
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig
from schemathesis.core.result import Err
from schemathesis.schemas import APIOperation

from orchestrator.core.envelope import Envelope
from studio import openai_compat, openai_schemas
from studio.api import api
from studio.models import (
    ApiToken,
    Checkpoint,
    CheckpointKind,
    Collection,
    EvaluationRun,
    Node,
    PreferencePair,
    Run,
    RunStatus,
    TrainingJob,
)
from studio.services import chat_completion
from tests.factories import RunFactory, TaskFactory
from tests.hardening.conftest import TokenUser

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("ORCHESTRA_FUZZ_EXAMPLES", "10"))
MIN_CASES = 1000 if EXAMPLES >= 10 else 0
# The OpenAI-compatible endpoint's one route with a body gets five times the examples.
WEIGHT = {"POST /v1/chat/completions": 5}
# GET /api/health takes no input, pings the workers for 1 s and answers 503 by design while none runs.
SKIPPED = {"GET /api/health"}


def openai_schema() -> dict[str, Any]:
    """/v1/ as OpenAPI 3.1; the request body is ChatIn's own JSON schema."""
    body = openai_schemas.ChatIn.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = body.pop("$defs", {})
    # Messages with text and real models, so that most positive cases get past the first checks.
    part = {"$ref": "#/components/schemas/ContentPart"}
    defs["MessageIn"]["properties"]["role"] = {"enum": ["user", "system", "assistant"]}
    defs["MessageIn"]["properties"]["content"] = {
        "anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1, "items": part}]
    }
    defs["MessageIn"]["required"] = ["role", "content"]
    defs["ContentPart"]["properties"]["type"] = {"enum": ["text", "input_text"]}
    defs["ContentPart"]["properties"]["text"] = {"type": "string", "minLength": 1}
    defs["ContentPart"]["required"] = ["type", "text"]
    body["properties"]["model"] = {"enum": openai_compat.model_ids()}
    answer = {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Orchestra Studio, OpenAI-compatible", "version": "1"},
        "paths": {
            "/v1/chat/completions": {
                "post": {
                    "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
                    "responses": {"200": answer},
                }
            },
            "/v1/models": {"get": {"responses": {"200": answer}}},
            "/v1/models/{model}": {
                "get": {
                    "parameters": [{"name": "model", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": {"200": answer},
                }
            },
        },
        "components": {"schemas": defs},
    }


def operations(*, nul: bool) -> list[APIOperation]:
    """Every operation but SKIPPED; `nul`: whether generated strings may hold U+0000."""
    config = SchemathesisConfig.from_dict({"generation": {"allow-x00": nul}})
    found = []
    for schema in (api.get_openapi_schema(), openai_schema()):
        for result in schemathesis.openapi.from_dict(schema, config=config).get_all_operations():
            if isinstance(result, Err):
                raise result.err()
            if result.ok().label not in SKIPPED:
                found.append(result.ok())
    return found


@dataclass
class Figures:
    cases: int = 0
    by_status: Counter[int] = field(default_factory=Counter)
    by_group: Counter[str] = field(default_factory=Counter)
    by_api: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def report(self, seconds: float) -> str:
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted(self.by_status.items()))
        groups = ", ".join(f"{name}: {n}" for name, n in sorted(self.by_group.items()))
        apis = ", ".join(f"/{name}/: {n}" for name, n in sorted(self.by_api.items()))
        server_errors = sum(n for status, n in self.by_status.items() if status >= 500)
        return (
            f"schemathesis: {self.cases} cases in {seconds:.1f} s ({apis}; {groups}); "
            f"server errors: {server_errors}; problems: {len(self.problems)}; statuses: {statuses}"
        )


def send(client: Client, case: Any, token: str) -> Any:
    """The case as the bytes `requests` would send, through Django's test client."""
    kwargs = case.as_transport_kwargs(base_url="http://testserver")
    kwargs["headers"]["Authorization"] = f"Bearer {token}"
    prepared = requests.Request(
        method=kwargs["method"],
        url=kwargs["url"],
        headers=kwargs["headers"],
        params=kwargs.get("params"),
        cookies=kwargs.get("cookies"),
        json=kwargs.get("json"),
        data=kwargs.get("data"),
    ).prepare()
    headers = {name: value for name, value in prepared.headers.items() if name.lower() != "content-length"}
    content_type = str(headers.pop("Content-Type", "application/octet-stream"))
    body = prepared.body.encode() if isinstance(prepared.body, str) else prepared.body or b""
    return client.generic(prepared.method or "GET", prepared.path_url, body, content_type, headers=headers)


def content_of(response: Any) -> bytes:
    if not response.streaming:
        return bytes(response.content)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Django's note that it consumes an async stream synchronously
        return b"".join(response)


def is_route(path: str) -> bool:
    try:
        resolve(path)
    except Resolver404:
        return False
    return True


def unhandled(exc: BaseException) -> str:
    """The exception and the innermost frame of the studio's own code it passed through."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/site-packages/" not in f.filename]
    where = f" at {frames[-1].filename}:{frames[-1].lineno} ({frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}{where}"


def problem_with(response: Any, content: bytes, path: str) -> str | None:
    """What is wrong with an answer, or None."""
    if response.status_code >= 500 or getattr(response, "exc_info", None):
        if response.exc_info:
            return unhandled(response.exc_info[1])
        return f"status {response.status_code}"
    if b"Traceback (most recent call last)" in content:
        return "a traceback in the body"
    if response.status_code < 400 or (response.status_code == 404 and not is_route(path)):
        return None  # a path no route matches is Django's plain 404, not an API error
    try:
        body = json.loads(content)
    except ValueError:
        return f"a {response.status_code} that is not JSON: {content[:80]!r}"
    if path.startswith("/v1/"):
        error = body.get("error") if isinstance(body, dict) else None
        if not (isinstance(error, dict) and isinstance(error.get("message"), str) and error.get("type")):
            return f"a {response.status_code} without OpenAI's error shape: {content[:120]!r}"
    elif not (isinstance(body, dict) and isinstance(body.get("detail"), str) and body["detail"]):
        return f"a {response.status_code} without a detail sentence: {content[:120]!r}"
    return None


@pytest.fixture
def quiet_request_log() -> Iterator[None]:
    """Django logs every 4xx and 5xx; the fuzz records its own problems."""
    logger = logging.getLogger("django.request")
    logger.disabled = True
    yield
    logger.disabled = False


def answer_42(work: Any) -> Envelope:
    """A stand-in for the worker's executor on /v1's fast path: every call answers 42."""
    return Envelope(status="ok", output="42", answer="42")


@pytest.fixture
def finish_at_once(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    """A stand-in for the worker: the run /v1/ waits for succeeds as soon as it is waited on,
    and a call on the fast path answers at once."""
    settings.ORCHESTRA_ATTEMPT_EXECUTOR = f"{__name__}.answer_42"

    async def run_wait(run_id: int, limit_s: float) -> Run | None:
        now = timezone.now()
        await Run.objects.filter(pk=run_id).aupdate(
            status=RunStatus.SUCCEEDED, final_answer="42", started_at=now, finished_at=now
        )
        return await Run.objects.aget(pk=run_id)

    monkeypatch.setattr(openai_compat, "run_wait", run_wait)
    monkeypatch.setattr(chat_completion, "run_wait", run_wait)  # a streamed answer waits there


@pytest.fixture
def real_ids(admin_token: TokenUser, usable_pool: Any) -> dict[str, Any]:
    """Path parameters naming rows that exist: the admin's task, run (with a node), pair, token..."""
    endpoint = usable_pool.endpoints.get()
    admissibility = endpoint.admissibilities.get()
    task = TaskFactory(owner=admin_token.user)
    runs = [RunFactory(task=task, pool=usable_pool, status=RunStatus.SUCCEEDED) for _ in range(2)]
    node = Node.objects.create(run=runs[0], key="root", kind="root", text=task.text, status="succeeded")
    pair = PreferencePair.objects.create(task=task, run_a=runs[0], run_b=runs[1], created_by=admin_token.user)
    checkpoint = Checkpoint.objects.create(kind=CheckpointKind.POLICY, name="fuzz", path="checkpoints/fuzz.pt")
    job = TrainingJob.objects.create(kind=CheckpointKind.POLICY, created_by=admin_token.user)
    evaluation = EvaluationRun.objects.create(created_by=admin_token.user)
    collection = Collection.objects.create(owner=admin_token.user, pool=usable_pool, name="fuzz", status="stopped",
                                           source="collection-fuzz", budget_usd=1)  # fmt: skip
    return {
        "pool_id": usable_pool.pk,
        "endpoint_id": endpoint.pk,
        "primitive_id": admissibility.primitive_id,
        "admissibility_id": admissibility.pk,
        "task_id": task.pk,
        "run_id": runs[0].pk,
        "node_key": node.key,
        "pair_id": pair.pk,
        "token_id": ApiToken.objects.get(user=admin_token.user).pk,
        "checkpoint_id": checkpoint.pk,
        "job_id": job.pk,
        "evaluation_id": evaluation.pk,
        "collection_id": collection.pk,
        "model": "orchestra",
    }


def operation_label(case: Any) -> str:
    return f"{case.method.upper()} {case.operation.path}"


def fuzz(
    operation: APIOperation, mode: GenerationMode, path_parameters: dict[str, Any] | None, check: Callable[[Any], None]
) -> None:
    @settings(
        max_examples=EXAMPLES * WEIGHT.get(operation.label, 1),
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: problems are collected, not raised
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(mode, path_parameters=path_parameters))
    def run(case: Any) -> None:
        check(case)

    with contextlib.suppress(Unsatisfiable):  # nothing to generate, e.g. no way to break a schema without parameters
        run()


def test_no_generated_request_gets_a_server_error(
    admin_token: TokenUser, real_ids: dict[str, Any], finish_at_once: None, quiet_request_log: None
) -> None:
    client = Client(raise_request_exception=False)
    figures = Figures()

    def checked(group: str) -> Callable[[Any], None]:
        def check(case: Any) -> None:
            # Each case in a savepoint rolled back after it: a case that breaks the transaction
            # (a server error) does not break the ones after it, and nothing piles up.
            with transaction.atomic():
                response = send(client, case, admin_token.token)
                content = content_of(response)
                transaction.set_rollback(True)
            figures.cases += 1
            figures.by_group[group] += 1
            figures.by_api[case.operation.path.split("/")[1]] += 1
            figures.by_status[response.status_code] += 1
            problem = problem_with(response, content, response.request["PATH_INFO"])
            if problem:
                figures.problems.append(f"{operation_label(case)} [{group}]: {problem}\n    {case!r}")

        return check

    started = time.monotonic()
    # Strings with NUL stop at the parser (400), so only the negative cases carry them:
    # the positive ones go on to the services.
    for operation, hostile in zip(operations(nul=False), operations(nul=True), strict=True):
        fuzz(operation, GenerationMode.POSITIVE, None, checked("positive"))
        fuzz(hostile, GenerationMode.NEGATIVE, None, checked("negative"))
        names = {p.name for p in operation.path_parameters}
        if names:
            pinned = {name: real_ids[name] for name in names}
            fuzz(operation, GenerationMode.POSITIVE, pinned, checked("real ids"))
    print("\n" + figures.report(time.monotonic() - started))
    assert not figures.problems, f"{len(figures.problems)} problems:\n\n" + "\n\n".join(figures.problems[:20])
    assert figures.cases >= MIN_CASES
