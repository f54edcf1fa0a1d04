"""Every primitive over real HTTP against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers.llm import EndpointConfig, LLMClient
from providers.primitives import REGISTRY, PrimitiveInput, run_primitive
from providers.scripted_openai import Reply, ScriptedOpenAI, last_user, sequence


def llm_for(server: ScriptedOpenAI, **options: Any) -> LLMClient:
    return LLMClient(
        EndpointConfig(
            model="openai/scripted",
            api_base=server.base_url,
            api_key="sk-test",
            input_cost_per_mtok=1.0,
            output_cost_per_mtok=1.0,
            backoff_base_s=0.01,
            **options,
        )
    )


def test_all_primitives_are_registered() -> None:
    assert set(REGISTRY) == {
        "direct", "cot", "self_consistency", "program", "program_zero_shot",
        "tool_use", "verify", "reflexion", "long_context", "plan", "aggregate",
    }  # fmt: skip


def test_direct() -> None:
    with ScriptedOpenAI(lambda body: Reply(content=" Paris ", prompt_tokens=12, completion_tokens=3)) as server:
        envelope = run_primitive("direct", llm_for(server), PrimitiveInput(prompt="Capital of France?"))
    assert envelope.status == "ok"
    assert envelope.answer == "Paris"
    assert (envelope.tokens_in, envelope.tokens_out) == (12, 3)
    assert envelope.cost_usd == pytest.approx(15 / 1e6)
    assert envelope.latency_s > 0


def test_cot_extracts_the_final_answer() -> None:
    reply = Reply(content="There are 3 boxes of 4.\n3 * 4 = 12.\nAnswer: 12")
    with ScriptedOpenAI(lambda body: reply) as server:
        envelope = run_primitive("cot", llm_for(server), PrimitiveInput(prompt="3 boxes of 4 apples?"))
    assert envelope.answer == "12"
    assert "step by step" in server.requests[0]["messages"][0]["content"]


def test_self_consistency_votes_over_k_samples_and_sums_usage() -> None:
    answers = ["Answer: 12", "Answer: 12.0", "Answer: 13", "Answer: 12", "Answer: 11"]
    with ScriptedOpenAI(sequence(Reply(content=a, prompt_tokens=10, completion_tokens=4) for a in answers)) as server:
        envelope = run_primitive(
            "self_consistency", llm_for(server), PrimitiveInput(prompt="q"), {"k": 5, "temperature": 0.9}
        )
    assert envelope.answer == "12"
    assert envelope.artifacts["votes"] == {"12": 3, "13": 1, "11": 1}
    assert len(server.requests) == 5
    assert server.requests[0]["temperature"] == 0.9
    assert (envelope.tokens_in, envelope.tokens_out) == (50, 20)
    assert envelope.artifacts["calls"] == 5


def test_verify_returns_a_verdict() -> None:
    with ScriptedOpenAI(lambda body: Reply(content="12 is right.\nVERDICT: correct")) as server:
        envelope = run_primitive("verify", llm_for(server), PrimitiveInput(prompt="3*4?", candidate="12"))
    assert envelope.answer == "correct"
    assert envelope.artifacts["verdict"] is True
    assert "Proposed answer:\n12" in last_user(server.requests[0])


def test_verify_without_a_verdict_is_a_parse_error() -> None:
    with ScriptedOpenAI(lambda body: Reply(content="hmm, not sure")) as server:
        envelope = run_primitive("verify", llm_for(server), PrimitiveInput(prompt="q", candidate="a"))
    assert envelope.status == "error"
    assert envelope.error_kind == "parse"


def test_long_context_maps_chunks_then_reduces() -> None:
    document = " ".join(f"word{i}" for i in range(3000)) + " The key is 7391."

    def script(body: dict[str, Any]) -> Reply:
        text = last_user(body)
        if text.startswith("Answer the question from these notes"):
            return Reply(content="From the notes.\nAnswer: 7391")
        return Reply(content="The key is 7391." if "7391" in text else "NOTHING")

    with ScriptedOpenAI(script) as server:
        envelope = run_primitive(
            "long_context",
            llm_for(server),
            PrimitiveInput(prompt="What is the key?", context=document),
            {"chunk_tokens": 1000},
        )
    assert envelope.answer == "7391"
    assert envelope.artifacts["chunks"] >= 4
    assert envelope.artifacts["relevant_chunks"] == 1
    assert len(server.requests) == envelope.artifacts["chunks"] + 1


def test_tool_use_calls_the_calculator_then_answers() -> None:
    replies = [
        Reply(content=None, tool_calls=[{"name": "calculator", "arguments": {"expression": "1234 * 5678"}}]),
        Reply(content="The product is 7006652.\nAnswer: 7006652"),
    ]
    with ScriptedOpenAI(sequence(replies)) as server:
        envelope = run_primitive("tool_use", llm_for(server), PrimitiveInput(prompt="1234*5678?"))
    assert envelope.answer == "7006652"
    assert envelope.artifacts["trace"][0]["result"] == "7006652"
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "7006652"
    assert {t["function"]["name"] for t in server.requests[0]["tools"]} == {"calculator", "python"}


def test_tool_use_with_the_tasks_own_functions_returns_the_calls() -> None:
    schema = {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
    reply = Reply(content=None, tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}])
    with ScriptedOpenAI(lambda body: reply) as server:
        envelope = run_primitive(
            "tool_use", llm_for(server), PrimitiveInput(prompt="Weather in Paris?", tools=[schema])
        )
    assert json.loads(envelope.answer or "") == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert "get_weather" in {t["function"]["name"] for t in server.requests[0]["tools"]}


def test_tool_use_gives_up_after_max_steps() -> None:
    loop = Reply(content=None, tool_calls=[{"name": "calculator", "arguments": {"expression": "1+1"}}])
    with ScriptedOpenAI(lambda body: loop) as server:
        envelope = run_primitive("tool_use", llm_for(server), PrimitiveInput(prompt="q"), {"max_steps": 3})
    assert envelope.status == "error"
    assert envelope.error_kind == "parse"
    assert len(server.requests) == 3


def test_a_provider_error_becomes_an_error_envelope_with_usage_so_far() -> None:
    replies = [Reply(content="Answer: 1", prompt_tokens=5, completion_tokens=1), Reply(status=401)]
    with ScriptedOpenAI(sequence(replies)) as server:
        envelope = run_primitive("self_consistency", llm_for(server), PrimitiveInput(prompt="q"), {"k": 3})
    assert envelope.status == "error"
    assert envelope.error_kind == "auth"
    assert envelope.tokens_in == 5  # the one call that succeeded is still billed


def test_a_timeout_becomes_a_timeout_envelope() -> None:
    with ScriptedOpenAI(lambda body: Reply(content="x", delay_s=1)) as server:
        envelope = run_primitive("direct", llm_for(server, timeout_s=0.2, max_retries=0), PrimitiveInput(prompt="q"))
    assert envelope.status == "timeout"
    assert envelope.error_kind == "timeout"


def test_an_unknown_primitive_is_a_clear_error() -> None:
    envelope = run_primitive("telepathy", LLMClient(EndpointConfig(model="openai/x")), PrimitiveInput(prompt="q"))
    assert envelope.error_kind == "bad_request"
    assert "telepathy" in (envelope.error_message or "")


def test_program_runs_the_code_in_the_sandbox() -> None:
    reply = Reply(content="```python\neggs = 16 - 3 - 4\nprint(eggs * 2)\n```")
    with ScriptedOpenAI(lambda body: reply) as server:
        envelope = run_primitive("program", llm_for(server), PrimitiveInput(prompt="Janet's ducks..."))
    assert envelope.status == "ok"
    assert envelope.answer == "18"
    assert envelope.artifacts["code"].startswith("eggs = 16")


def test_program_that_crashes_is_a_sandbox_error() -> None:
    with ScriptedOpenAI(lambda body: Reply(content="```python\nprint(1/0)\n```")) as server:
        envelope = run_primitive("program", llm_for(server), PrimitiveInput(prompt="q"))
    assert envelope.status == "error"
    assert envelope.error_kind == "sandbox"
    assert "ZeroDivisionError" in envelope.artifacts["stderr"]


def test_tool_use_runs_python_in_the_sandbox() -> None:
    replies = [
        Reply(content=None, tool_calls=[{"name": "python", "arguments": {"code": "print(sum(range(101)))"}}]),
        Reply(content="Answer: 5050"),
    ]
    with ScriptedOpenAI(sequence(replies)) as server:
        envelope = run_primitive("tool_use", llm_for(server), PrimitiveInput(prompt="Sum 0..100"))
    assert envelope.answer == "5050"
    assert envelope.artifacts["trace"][0]["result"].strip() == "5050"


TESTS = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"


def test_reflexion_retries_after_failing_tests() -> None:
    replies = [
        Reply(content="```python\ndef add(a, b):\n    return a - b\n```"),
        Reply(content="I subtracted instead of adding.\n```python\ndef add(a, b):\n    return a + b\n```"),
    ]
    with ScriptedOpenAI(sequence(replies)) as server:
        envelope = run_primitive(
            "reflexion",
            llm_for(server),
            PrimitiveInput(prompt="def add(a, b):", tests=TESTS, entry_point="add"),
            {"max_tries": 3},
        )
    assert envelope.status == "ok"
    assert envelope.artifacts["tests_passed"] is True
    assert [t["passed"] for t in envelope.artifacts["tries"]] == [False, True]
    assert "AssertionError" in envelope.artifacts["tries"][0]["feedback"]
    assert "failed the tests" in last_user(server.requests[1])
    assert "return a + b" in (envelope.answer or "")


def test_reflexion_stops_after_max_tries() -> None:
    with ScriptedOpenAI(lambda body: Reply(content="```python\ndef add(a, b):\n    return 0\n```")) as server:
        envelope = run_primitive(
            "reflexion",
            llm_for(server),
            PrimitiveInput(prompt="def add(a, b):", tests=TESTS, entry_point="add"),
            {"max_tries": 2},
        )
    assert envelope.artifacts["tests_passed"] is False
    assert len(server.requests) == 2


def test_replayed_program_output_is_executed() -> None:
    from orchestrator.outcomes import OutcomeRecord
    from providers import replay

    code = "total_eggs = 16\nsold = total_eggs - 3 - 4\nans = sold * 2"
    replay.install(
        replay.MemoryStore(
            [
                OutcomeRecord(
                    "pot",
                    "gsm8k.test.0",
                    "test",
                    "gsm8k",
                    "math",
                    "Janet's ducks...",
                    "18",
                    "codex",
                    "program",
                    code,
                    1.0,
                    100,
                    20,
                    None,
                    None,
                )  # fmt: skip
            ]
        )
    )
    envelope = run_primitive(
        "program",
        LLMClient(EndpointConfig(model="replay/codex")),
        PrimitiveInput(prompt="x", item_id="gsm8k.test.0"),
    )
    assert envelope.answer == "18"
    assert envelope.artifacts["recorded_score"] == 1.0
    assert envelope.artifacts["replay"] is True
    assert envelope.tokens_in == 100
