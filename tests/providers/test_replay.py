"""The replay provider, through litellm itself."""

from __future__ import annotations

import random

import litellm
import pytest

from orchestrator.outcomes import OutcomeRecord
from providers import replay
from providers.llm import EndpointConfig, LLMClient, ProviderError
from providers.replay.provider import Latency


def record(**fields: object) -> OutcomeRecord:
    base: dict[str, object] = dict(
        source="demo", item_id="demo.1", split="test", benchmark="gsm8k", domain="math",
        prompt="What is 2+2?", gold="4", model="gpt-x", primitive="direct", response="4",
        score=1.0, prompt_tokens=7, completion_tokens=1, cost_usd=0.0123, latency_s=0.5,
    )  # fmt: skip
    base.update(fields)
    return OutcomeRecord(**base)  # type: ignore[arg-type]


@pytest.fixture
def store() -> replay.MemoryStore:
    store = replay.MemoryStore(
        [
            record(),
            record(item_id="demo.2", prompt="Spell cat.", response="c-a-t", score=0.0, cost_usd=0.5),
            record(primitive="cot", response="2+2 is 4.\nAnswer: 4", cost_usd=0.02),
            record(item_id="demo.3", prompt="no text", response=None, prompt_tokens=None, completion_tokens=None),
        ]
    )
    replay.install(store)
    return store


def test_replay_by_prompt_returns_the_recording(store: replay.MemoryStore) -> None:
    response = litellm.completion(model="replay/gpt-x", messages=[{"role": "user", "content": "What is 2+2?"}])
    assert response.choices[0].message.content == "4"
    assert response.usage.prompt_tokens == 7
    assert response._hidden_params["replay"]["score"] == 1.0
    assert response._hidden_params["response_cost"] == 0.0123


def test_replay_by_item_id_and_primitive(store: replay.MemoryStore) -> None:
    llm = LLMClient(EndpointConfig(model="replay/gpt-x"))
    completion = llm.complete([{"role": "user", "content": "ignored"}], primitive="cot", item_id="demo.1")
    assert completion.text.endswith("Answer: 4")
    assert completion.cost_usd == 0.02
    assert completion.recording is not None and completion.recording["primitive"] == "cot"


def test_recorded_cost_wins_over_endpoint_prices(store: replay.MemoryStore) -> None:
    llm = LLMClient(EndpointConfig(model="replay/gpt-x", input_cost_per_mtok=1000, output_cost_per_mtok=1000))
    assert llm.complete([{"role": "user", "content": "Spell cat."}]).cost_usd == 0.5


def test_no_recording_fails_clearly_and_is_not_retried(store: replay.MemoryStore) -> None:
    llm = LLMClient(EndpointConfig(model="replay/gpt-x", max_retries=3, backoff_base_s=0))
    with pytest.raises(ProviderError) as caught:
        llm.complete([{"role": "user", "content": "What is 3+3?"}])
    assert caught.value.kind == "no_recording"
    assert "No recording for replay/gpt-x" in caught.value.message
    assert "never invents" in caught.value.message
    assert llm.meter.retries == 0
    with pytest.raises(ProviderError):
        llm.complete([{"role": "user", "content": "What is 2+2?"}], primitive="self_consistency")
    with pytest.raises(ProviderError):
        LLMClient(EndpointConfig(model="replay/other-model")).complete([{"role": "user", "content": "What is 2+2?"}])


def test_a_record_without_text_replays_its_score_without_inventing_text(store: replay.MemoryStore) -> None:
    completion = LLMClient(EndpointConfig(model="replay/gpt-x")).complete(
        [{"role": "user", "content": "x"}], item_id="demo.3"
    )
    assert completion.text == ""
    assert completion.recording is not None
    assert completion.recording["response_recorded"] is False
    assert completion.tokens_in == 2  # estimated from "no text" at 4 characters a token


def test_simulated_latency() -> None:
    rng = random.Random(0)
    timed = replay.Recording("s", "i", "m", "direct", "r", 1.0, 1, 1, 0.0, 0.5)
    untimed = replay.Recording("s", "i", "m", "direct", "r", 1.0, 1, 1, 0.0, None)
    assert Latency.parse("off").seconds(timed, rng) == 0
    assert Latency.parse("recorded").seconds(timed, rng) == 0.5
    assert Latency.parse("fixed:0.25").seconds(untimed, rng) == 0.25
    fallback = Latency.parse("recorded+uniform:1,2").seconds(untimed, rng)
    assert 1 <= fallback <= 2
    with pytest.raises(ValueError, match="not off, recorded"):
        Latency.parse("gaussian:1")


def test_a_whole_composite_call_answers_each_part_from_its_recording(store: replay.MemoryStore) -> None:
    llm = LLMClient(EndpointConfig(model="replay/gpt-x"))
    completion = llm.complete([{"role": "user", "content": "Answer each part: ..."}], item_ids=("demo.1", "demo.2"))
    assert completion.text == "Part 1: 4\n\nPart 2: c-a-t"
    assert completion.cost_usd == pytest.approx(0.0123 + 0.5)
    assert completion.tokens_in == 14 and completion.tokens_out == 2
    assert completion.recording is not None and completion.recording["score"] == 0.5
    assert [p["score"] for p in completion.recording["parts"]] == [1.0, 0.0]
    with pytest.raises(ProviderError) as caught:  # one part unrecorded: the whole call fails, naming it
        llm.complete([{"role": "user", "content": "x"}], item_ids=("demo.1", "demo.9"))
    assert caught.value.kind == "no_recording" and "'demo.9'" in caught.value.message


def test_a_primitive_on_a_composite_node_keeps_each_parts_answer_and_score(store: replay.MemoryStore) -> None:
    from providers.primitives import PrimitiveInput, run_primitive

    llm = LLMClient(EndpointConfig(model="replay/gpt-x"))
    envelope = run_primitive("cot", llm, PrimitiveInput(prompt="both", items=("demo.1",)))
    assert envelope.status == "ok" and envelope.answer == "Part 1: 4"
    assert envelope.artifacts["part_scores"] == [1.0] and envelope.artifacts["items"] == ["demo.1"]
