"""Provider faults, end to end: a real Celery worker runs runs whose endpoints are the scripted
OpenAI-compatible server, which injects one kind of fault. Each run ends by a retry, by a
fallback to another admissible pair, or with a stated reason; never hangs, never bills a
call twice. A run with a cost budget ends at most one attempt past it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

from providers.llm import EndpointConfig, LLMClient, ProviderError
from providers.scripted_openai import FAULT_KINDS, Faults, Reply, ScriptedOpenAI, last_user
from studio.models import Admissibility, Attempt, ModelPool, Primitive, Run
from studio.services.pools import endpoint_create
from studio.services.runs import run_create
from studio.services.tasks import task_create
from tests.factories import PoolFactory, UserFactory
from tests.support.runs import wait_for_run
from tests.support.worker import running_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

TIMEOUT_S = 1  # the provider timeout the worker gets (ORCHESTRA_PROVIDER_TIMEOUT_S)
PRICE = 1000.0  # $/M tokens, in and out: a 10 + 5 token call costs $0.015
CALL_COST = Decimal("0.015")
# What each fault becomes once the client has read it.
KIND_SEEN = {
    "rate_limit": "rate_limit",
    "server_error": "server_error",
    "timeout": "timeout",
    "truncated": "server_error",
    "slow_stream": "timeout",
}


@pytest.fixture
def worker(settings: Any) -> Iterator[object]:
    settings.ORCHESTRA_PROVIDER_TIMEOUT_S = TIMEOUT_S
    settings.ORCHESTRA_PROVIDER_MAX_RETRIES = 1
    with running_worker(concurrency=8) as w:
        yield w


def answer(body: dict[str, Any]) -> Reply:
    """The plan for a planning call; else the number in the question, doubled."""
    if "You split a task" in (body["messages"][0].get("content") or ""):
        subtasks = [{"id": f"q{i}", "text": f"Question {i}: double {i}."} for i in range(1, 7)]
        return Reply(content=json.dumps({"subtasks": subtasks}))
    question = last_user(body)
    number = int("".join(ch for ch in question.split(":")[0] if ch.isdigit()) or 0)
    return Reply(content=str(2 * number), prompt_tokens=10, completion_tokens=5)


def first_faults(kind: str, faults: int) -> Callable[[dict[str, Any]], Reply]:
    """A script whose first `faults` requests (per model) get `kind`, then answers."""
    injector = Faults(answer, client_timeout_s=TIMEOUT_S)
    seen: dict[str, int] = {}

    def script(body: dict[str, Any]) -> Reply:
        model = str(body.get("model"))
        seen[model] = seen.get(model, 0) + 1
        return injector.fault(kind if seen[model] <= faults else "none", body)

    return script


def faulty_model(kind: str, model: str) -> Callable[[dict[str, Any]], Reply]:
    """A script where `model` always gets `kind` and every other model answers."""
    injector = Faults(answer, client_timeout_s=TIMEOUT_S)
    return lambda body: injector.fault(kind if body.get("model") == model else "none", body)


def make_pool(server: ScriptedOpenAI, *, primitives: tuple[str, ...] = ("direct",)) -> ModelPool:
    """Two endpoints: `cheap` (the default policy's first choice) and `dear`, at 3x its price."""
    pool = PoolFactory()
    for name, factor in (("cheap", 1), ("dear", 3)):
        endpoint = endpoint_create(
            pool_id=pool.pk, name=name, model=f"openai/{name}", api_base=server.base_url, api_key="sk-test",
            input_cost_per_mtok=PRICE * factor, output_cost_per_mtok=PRICE * factor,
        )  # fmt: skip
        for primitive in primitives:
            Admissibility.objects.create(
                endpoint=endpoint, primitive=Primitive.objects.get_or_create(name=primitive)[0]
            )
    return pool


def start_run(pool: ModelPool, text: str = "Question 21: double 21.", **budget: Any) -> Run:
    owner = UserFactory()
    task = task_create(owner=owner, text=text, decomposable=bool(budget.pop("decomposable", False)))
    return run_create(owner=owner, task_id=task.pk, pool_id=pool.pk, **budget)


def attempts(run: Run) -> list[Attempt]:
    return list(Attempt.objects.filter(node__run=run).select_related("endpoint").order_by("node_id", "number"))


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_a_fault_is_retried_and_billed_once(worker: object, kind: str) -> None:
    with ScriptedOpenAI(first_faults(kind, 1)) as server:
        run = start_run(make_pool(server))
        started = time.monotonic()
        run = wait_for_run(run.pk, timeout=30)
    assert (run.status, run.final_answer) == ("succeeded", "42"), run.end_reason
    [attempt] = attempts(run)
    assert attempt.envelope["artifacts"]["retries"] == 1
    assert len(server.requests) == 2
    assert run.cost_usd == CALL_COST  # the failed call is not billed; the good one once
    assert time.monotonic() - started < 4 * TIMEOUT_S + 5


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_an_endpoint_that_always_fails_falls_back_to_another_pair(worker: object, kind: str) -> None:
    with ScriptedOpenAI(faulty_model(kind, "cheap")) as server:
        run = start_run(make_pool(server))
        run = wait_for_run(run.pk, timeout=60)
    assert (run.status, run.final_answer) == ("succeeded", "42"), run.end_reason
    tried = [(a.endpoint.name, a.status, a.error_kind) for a in attempts(run)]
    # The default policy retries a transient failure once on the same pair, then repairs.
    failed = ("cheap", "timeout" if KIND_SEEN[kind] == "timeout" else "error", KIND_SEEN[kind])
    assert tried == [failed, failed, ("dear", "ok", "")]
    assert run.cost_usd == 3 * CALL_COST


@pytest.mark.parametrize("kind", ["rate_limit", "truncated", "slow_stream"])
def test_when_every_pair_fails_the_run_says_why(worker: object, kind: str) -> None:
    with ScriptedOpenAI(Faults(answer, rate=1.0, kinds=[kind], client_timeout_s=TIMEOUT_S)) as server:
        run = start_run(make_pool(server))
        run = wait_for_run(run.pk, timeout=60)
    assert run.status == "failed"
    assert run.end_reason.startswith("the task failed: Gave up after 4 attempts; the last: ")
    assert KIND_SEEN[kind] in run.end_reason
    assert run.cost_usd == 0


def test_a_slow_body_is_cut_off_at_the_timeout_not_after_it() -> None:
    """Each piece of the body arrives within the read timeout; the whole would take 4.8 s."""
    slow = Faults(answer, client_timeout_s=1.0, slow_pieces=9)
    with ScriptedOpenAI(lambda body: slow.fault("slow_stream", body)) as server:
        llm = LLMClient(
            EndpointConfig(model="openai/x", api_base=server.base_url, api_key="k", timeout_s=1.0, max_retries=0)
        )
        started = time.monotonic()
        with pytest.raises(ProviderError) as caught:
            llm.complete([{"role": "user", "content": "Question 2: double 2."}])
    assert caught.value.kind == "timeout"
    assert time.monotonic() - started < 1.5
    assert llm.meter.cost_usd == 0


def test_faults_are_reproducible_from_the_seed() -> None:
    def draw(seed: int) -> list[str]:
        faults = Faults(answer, seed=seed)
        return [faults.choose(f"m{i % 2}", f"p{i % 7}") for i in range(200)]

    first = draw(7)
    assert first == draw(7)
    assert first != draw(8)
    share = sum(kind != "none" for kind in first) / len(first)
    assert 0.2 < share < 0.4
    assert set(first) == {"none", *FAULT_KINDS}


def test_a_cost_budget_is_overshot_by_at_most_one_attempt(worker: object) -> None:
    """Six independent subtasks would cost 6 calls; the budget allows 2.5 of them after the plan."""
    with ScriptedOpenAI(answer) as server:
        pool = make_pool(server, primitives=("direct", "plan"))
        budget = CALL_COST * Decimal("3.5")  # the plan call, then 2.5 subtask calls
        run = start_run(pool, text="Double each of 1 to 6.", decomposable=True, max_cost_usd=budget)
        run = wait_for_run(run.pk, timeout=60)
    costs = [a.cost_usd for a in attempts(run)]
    assert run.status == "failed"
    assert run.end_reason.startswith("budget: cost"), run.end_reason
    assert run.cost_usd == sum(costs)
    assert run.cost_usd - budget <= max(costs), f"overshoot {run.cost_usd - budget} with attempts {costs}"
    assert run.cost_usd >= budget  # it used the budget, not stopped early
