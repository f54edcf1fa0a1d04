"""What a primitive needs besides the prompt reaches it from the task's metadata, in real runs
(a real Celery worker, the scripted OpenAI-compatible server): reflexion's unit tests and entry
point, tool_use's function schemas (a BFCL item, its call then checked by the BFCL checker in a
worker), and the answer verify reviews."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from providers.scripted_openai import Reply, ScriptedOpenAI, last_user
from studio.models import Admissibility, Attempt, ModelPool, Primitive, Run, RunEvent
from studio.services.pools import endpoint_create
from studio.services.runs import run_create
from studio.services.tasks import task_create
from tests.factories import PoolFactory, UserFactory
from tests.support.runs import wait_for_run
from workers import benchmarks

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def pool_of(server: ScriptedOpenAI, primitive: str) -> tuple[ModelPool, int]:
    pool = PoolFactory()
    endpoint = endpoint_create(
        pool_id=pool.pk, name="scripted", model="openai/scripted", api_base=server.base_url, api_key="sk-test",
        input_cost_per_mtok=1, output_cost_per_mtok=1,
    )  # fmt: skip
    Admissibility.objects.create(endpoint=endpoint, primitive=Primitive.objects.get_or_create(name=primitive)[0])
    return pool, endpoint.pk


def run_with(primitive: str, server: ScriptedOpenAI, **task: Any) -> Run:
    owner = UserFactory()
    pool, endpoint_id = pool_of(server, primitive)
    created = task_create(owner=owner, **task)
    run = run_create(
        owner=owner, task_id=created.pk, pool_id=pool.pk, policy="default",
        policy_config={"pairs": [[endpoint_id, primitive]]},
    )  # fmt: skip
    return wait_for_run(run.pk)


def wait_verified(run_id: int, timeout: float = 30) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = Run.objects.get(pk=run_id)
        if not run.verification.get("pending"):
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id}'s verification is still pending after {timeout} s")


WRONG = "```python\ndef add_two(x):\n    return x + 1\n```"
RIGHT = "```python\ndef add_two(x):\n    return x + 2\n```"


def test_reflexion_gets_the_tests_and_passes_after_one_failure(celery_worker: object) -> None:
    def script(body: dict[str, Any]) -> Reply:
        return Reply(content=RIGHT if "failed the tests" in last_user(body) else WRONG)

    with ScriptedOpenAI(script) as server:
        run = run_with(
            "reflexion", server, text="Write add_two(x), which returns x plus two.",
            metadata={"tests": "def check(candidate):\n    assert candidate(2) == 4\n", "entry_point": "add_two"},
        )  # fmt: skip
        requests = list(server.requests)
    assert run.status == "succeeded", run.end_reason
    attempt = Attempt.objects.get(node__run=run)
    assert attempt.request["entry_point"] == "add_two" and "candidate(2) == 4" in attempt.request["tests"]
    tries = attempt.envelope["artifacts"]["tries"]
    assert [t["passed"] for t in tries] == [False, True]
    assert attempt.envelope["artifacts"]["tests_passed"] is True
    assert "return x + 2" in run.final_answer
    assert len(requests) == 2 and "failed the tests" in last_user(requests[1])


def test_tool_use_gets_a_bfcl_items_functions_and_its_call_is_checked(celery_worker: object) -> None:
    item = benchmarks.load("bfcl_simple_python")[0]  # calculate_triangle_area(base=10, height=5)
    names = [function["name"] for function in item["function"]]

    def script(body: dict[str, Any]) -> Reply:
        offered = [tool["function"]["name"] for tool in body.get("tools", [])]
        if "calculate_triangle_area" not in offered:
            return Reply(content="I have no function to call.")
        return Reply(
            content=None, tool_calls=[{"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}]
        )

    with ScriptedOpenAI(script) as server:
        run = run_with(
            "tool_use", server, text=item["question"][0][0]["content"], metadata={"tools": item["function"]},
            gold_answer=json.dumps(item["possible_answer"]), checker="bfcl",
        )  # fmt: skip
        offered = [tool["function"]["name"] for tool in server.requests[0]["tools"]]
    assert run.status == "succeeded", run.end_reason
    assert set(names) <= set(offered)
    assert json.loads(run.final_answer) == [{"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}]
    # The checker runs in a worker after the run ended, and its verdict is an event of the run.
    finished = RunEvent.objects.get(run=run, type="run.finished")
    assert finished.payload["verification"] == {"method": "checker", "checker": "bfcl", "pending": True}
    verified = wait_verified(run.pk)
    assert verified.verification["correct"] is True and verified.verification["score"] == 1.0
    event = RunEvent.objects.get(run=run, type="run.verified")
    assert event.payload["verification"]["correct"] is True


def test_verify_gets_the_answer_under_review(celery_worker: object) -> None:
    def script(body: dict[str, Any]) -> Reply:
        verdict = "correct" if "Proposed answer:\n42" in last_user(body) else "incorrect"
        return Reply(content=f"Six times seven is 42.\nVERDICT: {verdict}")

    with ScriptedOpenAI(script) as server:
        run = run_with("verify", server, text="What is 6*7?", metadata={"candidate": "42"})
        requests = list(server.requests)
    assert run.status == "succeeded", run.end_reason
    assert "Proposed answer:\n42" in last_user(requests[0])
    assert run.final_answer == "correct"
