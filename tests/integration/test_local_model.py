"""The real local model (SmolLM2-135M-Instruct under llama.cpp's server, as `up` serves it)
through the studio's own paths, on a live server and a real Celery worker:

- a user's own prompt, which no recording answers, gets the local model's answer through /v1,
  in the demo pool as `manage.py bootstrap` makes it (replay endpoints beside the local one);
  a pool of replay endpoints alone still answers it with replay's clear 502;
- a streamed /v1 request;
- a decomposable task planned by the real model, each planner outcome counted on the run;
- a collection of ten real outcomes (five tasks × `direct` and `cot` of the local model);
- the model server killed during a call: the attempt fails as unreachable, the run says so,
  and nothing is billed for the call that did not answer;
- a prompt longer than the model's context: an error naming the limit.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from decimal import Decimal
from typing import Any

import pytest
from openai import OpenAI

from providers import local_server as support
from providers.local_model import Server
from studio.models import Attempt, JobStatus, ModelEndpoint, ModelPool, Primitive, RecordedOutcome, Run, User
from studio.services.bootstrap import LOCAL_PRIMITIVES, LocalModel, local_endpoint_ensure
from studio.services.collections import collection_create
from studio.services.pools import endpoint_create
from studio.services.tasks import task_create
from tests.support.runs import wait_for_run
from workers.collection import run_collection

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PRICE = 0.25  # $/M tokens, the default of ORCHESTRA_LOCAL_MODEL_PRICE


@pytest.fixture(scope="module")
def local_model() -> Any:
    with support.serving() as (spec, _process):
        yield spec


def demo_pool(spec: Server, name: str = "demo") -> ModelPool:
    """The demo pool as `manage.py bootstrap` makes it (its own code): the local model with its
    primitives, and a dearer replay endpoint that has no recording of anything here."""
    Primitive.objects.get_or_create(name="direct")
    local = LocalModel(url=spec.url, name=spec.name, price_per_mtok=PRICE, context=spec.context)
    endpoint, made = local_endpoint_ensure(pool_name=name, local=local)
    assert made
    endpoint_create(
        pool_id=endpoint.pool_id, name="gpt-4", model="replay/gpt-4",
        input_cost_per_mtok=30, output_cost_per_mtok=60, primitives=["direct"],
    )  # fmt: skip
    return endpoint.pool


def client(base_url: str, token: str) -> OpenAI:
    return OpenAI(base_url=f"{base_url}/v1", api_key=token, max_retries=0, timeout=120)


def test_a_users_own_prompt_is_answered_by_the_local_model(
    local_model: Server, asgi_server: str, celery_worker: object, user_token: tuple[User, str]
) -> None:
    pool = demo_pool(local_model)
    local = ModelEndpoint.objects.get(pool=pool, model="openai/smollm2")
    assert sorted(local.admissibilities.values_list("primitive__name", flat=True)) == sorted(LOCAL_PRIMITIVES)
    raw = client(asgi_server, user_token[1]).chat.completions.with_raw_response.create(
        model="orchestra", messages=[{"role": "user", "content": "What is 6*7? Answer with a number."}],
        extra_body={"pool": pool.name, "preset": "cheap"},
    )  # fmt: skip
    completion = raw.parse()
    text = completion.choices[0].message.content
    assert text and text.strip()
    run = wait_for_run(int(raw.headers["x-orchestra-run-id"]))
    assert run.status == "succeeded" and run.final_answer.strip()
    attempts = list(Attempt.objects.filter(node__run=run))
    # Only the local model was called: the replay endpoint has no recording of this prompt.
    assert {a.endpoint_id for a in attempts} == {local.pk}
    assert all(a.status == "ok" for a in attempts)
    assert completion.usage is not None and completion.usage.completion_tokens > 0
    tokens = run.tokens_in + run.tokens_out
    assert run.cost_usd == pytest.approx(Decimal(str(tokens * PRICE / 1e6)), abs=Decimal("1e-8"))


def test_a_replay_pool_alone_still_never_invents_an_answer(
    asgi_server: str, celery_worker: object, user_token: tuple[User, str]
) -> None:
    from tests.factories import PoolFactory

    pool = PoolFactory()
    Primitive.objects.get_or_create(name="direct")
    endpoint_create(pool_id=pool.pk, name="gpt-4", model="replay/gpt-4", primitives=["direct"])
    with pytest.raises(Exception, match="[Nn]o recording"):
        client(asgi_server, user_token[1]).chat.completions.create(
            model="orchestra", messages=[{"role": "user", "content": "A prompt nobody recorded."}],
            extra_body={"pool": pool.pk},
        )  # fmt: skip


def test_a_streamed_request_gets_the_local_models_answer(
    local_model: Server, asgi_server: str, celery_worker: object, user_token: tuple[User, str]
) -> None:
    pool = demo_pool(local_model, "demo-stream")
    raw = client(asgi_server, user_token[1]).chat.completions.with_raw_response.create(
        model="orchestra", messages=[{"role": "user", "content": "Name a colour."}],
        extra_body={"pool": pool.name}, stream=True, stream_options={"include_usage": True},
    )  # fmt: skip
    chunks = list(raw.parse())
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    usage = [c.usage for c in chunks if c.usage is not None]
    assert usage and usage[-1].completion_tokens > 0
    run = wait_for_run(int(raw.headers["x-orchestra-run-id"]))
    assert run.final_answer == text


def test_a_decomposed_run_is_planned_by_the_real_model(
    local_model: Server, asgi_server: str, celery_worker: object, user_token: tuple[User, str]
) -> None:
    """The local model plans: its reply is parsed (a repair prompt after an invalid one; after
    a second, the task is solved whole). Whatever the tiny model writes, the run ends with an
    answer and counts what its planner did."""
    pool = demo_pool(local_model, "demo-plan")
    raw = client(asgi_server, user_token[1]).chat.completions.with_raw_response.create(
        model="orchestra",
        messages=[{"role": "user", "content": "Compute 2+3, then compute 4*5, then add the two results."}],
        extra_body={"pool": pool.name, "decomposable": True},
    )  # fmt: skip
    run = wait_for_run(int(raw.headers["x-orchestra-run-id"]))
    plans = Attempt.objects.filter(node__run=run, node__key="root", primitive__name="plan")
    assert plans.count() >= 1
    plan = plans.first()
    assert plan is not None and plan.endpoint.model == "openai/smollm2"
    assert plan.tokens_out > 0  # a real reply, parsed or not
    counted = run.verification.get("plans")
    assert counted and sum(counted.values()) == plans.count()
    assert set(counted) <= {"parsed", "repaired", "fell_back"}
    assert run.status == "succeeded", run.end_reason
    if "fell_back" in counted:  # solved whole after the invalid plans
        assert Attempt.objects.filter(node__run=run, node__key="root").exclude(primitive__name="plan").exists()
    else:
        assert run.nodes.filter(kind="subtask").exists()


def test_a_collection_records_ten_real_outcomes(local_model: Server) -> None:
    from tests.factories import UserFactory

    pool = demo_pool(local_model, "demo-collect")
    local = ModelEndpoint.objects.get(pool=pool, model="openai/smollm2")
    owner = UserFactory()
    tasks = [
        task_create(owner=owner, text=f"What is {a} + {b}? Answer with the number only.", gold_answer=str(a + b),
                    checker="gsm8k", benchmark="gsm8k", domain="math").pk
        for a, b in ((1, 2), (3, 4), (2, 2), (5, 1), (6, 3))
    ]  # fmt: skip
    pairs = [(local.pk, "direct"), (local.pk, "cot")]
    collection = collection_create(
        owner=owner, pool_id=pool.pk, task_ids=tasks, pairs=pairs, budget_usd=1.0, enqueue=False
    )
    assert run_collection(collection.pk) == JobStatus.SUCCEEDED
    rows = RecordedOutcome.objects.filter(source=collection.source)
    assert rows.count() == 10
    assert {r.primitive for r in rows} == {"direct", "cot"}
    assert all((r.completion_tokens or 0) > 0 for r in rows)
    assert {r.score for r in rows} <= {0.0, 1.0}


def test_the_model_server_killed_during_a_call_fails_the_attempt_clearly(
    asgi_server: str, celery_worker: object, user_token: tuple[User, str]
) -> None:
    """SIGKILL to llama.cpp's server while it generates: the attempt fails as unreachable (or
    its connection dropped), the run's 502 and end reason name it, and the call is billed $0:
    no answer came, and it is not made twice."""
    with support.serving() as (spec, process):
        pool = demo_pool(spec, "demo-kill")
        threading.Timer(0.8, lambda: os.kill(process.pid, signal.SIGKILL)).start()
        started = time.monotonic()
        with pytest.raises(Exception) as failed:
            client(asgi_server, user_token[1]).chat.completions.create(
                model="orchestra",
                messages=[{"role": "user", "content": "Write a long story about a lighthouse keeper."}],
                extra_body={"pool": pool.name},
            )  # fmt: skip
        assert time.monotonic() - started < 60
    message = str(failed.value)
    assert "could not be reached" in message or "failed" in message, message
    run = Run.objects.filter(task__text__startswith="Write a long story").latest("pk")
    run = wait_for_run(run.pk)
    assert run.status == "failed"
    attempts = list(Attempt.objects.filter(node__run=run))
    assert attempts and all(a.status == "error" for a in attempts)
    assert {a.error_kind for a in attempts} <= {"connection", "server_error"}
    assert run.cost_usd == 0


def test_a_prompt_longer_than_the_context_names_the_limit(
    asgi_server: str, celery_worker: object, user_token: tuple[User, str]
) -> None:
    with support.serving(context=512) as (spec, _process):
        pool = demo_pool(spec, "demo-context")
        with pytest.raises(Exception) as failed:
            client(asgi_server, user_token[1]).chat.completions.create(
                model="orchestra", messages=[{"role": "user", "content": "word " * 1500}],
                extra_body={"pool": pool.name},
            )  # fmt: skip
    message = str(failed.value)
    assert "longer than the model's context" in message and "512" in message, message
    run = Run.objects.filter(task__text__startswith="word word").latest("pk")
    attempt = Attempt.objects.filter(node__run=run).first()
    assert attempt is not None and attempt.error_kind == "context_length"
