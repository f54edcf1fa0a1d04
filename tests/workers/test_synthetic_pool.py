"""The synthetic pool, served on 127.0.0.1 and called through litellm as a provider is: the same
request gets the same answer, each model's accuracy is what its config says, a right answer
passes the item's real checker and a wrong one fails it, and a prompt it cannot place is a 400."""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import litellm
import pytest

from orchestrator.benchmark_tasks import TaskSpec, benchmark_tasks
from providers.checkers import check
from providers.llm import EndpointConfig, LLMClient
from providers.primitives import PrimitiveInput, run_primitive
from workers.synthetic_answers import ItemIndex, draw
from workers.synthetic_config import DEFAULT_CONFIG, PoolConfig, SyntheticModel, config_from_dict, config_to_dict
from workers.synthetic_pool import SyntheticPool, main

ALWAYS = SyntheticModel("synthetic-always", {}, 1.0, 2.0, default_accuracy=1.0)
NEVER = SyntheticModel("synthetic-never", {}, 1.0, 2.0, default_accuracy=0.0)
CONFIG = PoolConfig(models=(*DEFAULT_CONFIG.models, ALWAYS, NEVER))


@pytest.fixture(scope="module")
def pool() -> Iterator[SyntheticPool]:
    with SyntheticPool(CONFIG) as served:
        yield served


def tools_of(spec: TaskSpec) -> list[dict[str, Any]] | None:
    """A BFCL item's functions, sent as tool_use sends them; None for other items."""
    return [{"type": "function", "function": f} for f in spec.metadata["tools"]] if "tools" in spec.metadata else None


def ask(pool: SyntheticPool, model: str, spec: TaskSpec, **params: Any) -> Any:
    params.setdefault("tools", tools_of(spec))
    return litellm.completion(
        model=f"openai/{model}", api_base=pool.base_url, api_key="k", num_retries=0,
        messages=[{"role": "user", "content": spec.text}], **params,
    )  # fmt: skip


def content(response: Any) -> str:
    message = response.choices[0].message
    if message.tool_calls:
        return json.dumps(
            [{"name": c.function.name, "arguments": json.loads(c.function.arguments)} for c in message.tool_calls]
        )
    return str(message.content)


def passes(spec: TaskSpec, answer: str) -> bool:
    item = {"prompt": spec.text, **{k: spec.metadata[k] for k in ("entry_point", "tests") if k in spec.metadata}}
    return check(spec.checker, answer, spec.gold, item=item).passed


def test_the_same_request_gets_the_same_answer(pool: SyntheticPool) -> None:
    specs = benchmark_tasks("math500", 20, seed=5)
    first = [content(ask(pool, "synthetic-small", spec)) for spec in specs]

    assert [content(ask(pool, "synthetic-small", spec)) for spec in specs] == first
    assert sum(passes(spec, answer) for spec, answer in zip(specs, first, strict=True)) not in (0, len(specs))


def test_empirical_accuracy_through_the_checker_is_the_configured_one(pool: SyntheticPool) -> None:
    specs = benchmark_tasks("gsm8k", 200, seed=0)

    right = [passes(spec, content(ask(pool, "synthetic-code", spec))) for spec in specs]

    assert right == [draw(0, "synthetic-code", spec) < 0.5 for spec in specs]  # each outcome as drawn
    assert abs(sum(right) / len(right) - 0.5) <= 0.1


@pytest.mark.parametrize("model", DEFAULT_CONFIG.models, ids=lambda m: m.name)
def test_every_models_accuracy_per_domain(pool: SyntheticPool, model: SyntheticModel) -> None:
    for benchmark, domain in (("gsm8k", "math"), ("mbpp", "code"), ("hotpotqa", "multi_hop"), ("bfcl", "tool_use")):
        specs = benchmark_tasks(benchmark, 200, seed=1)
        bodies = [
            {"model": model.name, "messages": [{"role": "user", "content": s.text}], "tools": tools_of(s)}
            for s in specs
        ]
        share = sum(pool.complete(body).right for body in bodies) / len(bodies)
        assert abs(share - model.accuracy[domain]) <= 0.1, (model.name, domain, share)


@pytest.mark.parametrize("benchmark", ["gsm8k", "math500", "hotpotqa", "bfcl", "humaneval", "mbpp"])
def test_right_answers_pass_the_real_checker_and_wrong_ones_fail(pool: SyntheticPool, benchmark: str) -> None:
    specs = benchmark_tasks(benchmark, 3 if benchmark in ("humaneval", "mbpp") else 25, seed=2)
    for spec in specs:
        assert passes(spec, content(ask(pool, "synthetic-always", spec))), spec.item_id
        assert not passes(spec, content(ask(pool, "synthetic-never", spec))), spec.item_id


def test_bfcl_items_are_answered_with_tool_calls_when_tools_are_sent_else_in_text(pool: SyntheticPool) -> None:
    spec = benchmark_tasks("bfcl_parallel", 1, seed=0)[0]

    response = ask(pool, "synthetic-always", spec)
    in_text = ask(pool, "synthetic-always", spec, tools=None)

    assert response.choices[0].finish_reason == "tool_calls" and response.choices[0].message.tool_calls
    assert passes(spec, content(response)) and not passes(spec, content(ask(pool, "synthetic-never", spec)))
    assert in_text.choices[0].message.tool_calls is None and passes(spec, content(in_text))


def test_bfcl_twins_without_their_functions_are_a_400(pool: SyntheticPool) -> None:
    """Two BFCL items ask "What is the air quality index in London 2022/08/16?" with other
    functions and other gold dates: only the functions sent tell which one is meant."""
    twins = ItemIndex.of_benchmarks().by_text["What is the air quality index in London 2022/08/16?"]
    assert len({twin.reference for twin in twins}) == 2
    for twin in twins:
        assert passes(twin, content(ask(pool, "synthetic-always", twin)))
    with pytest.raises(litellm.BadRequestError, match="share this task text; send the item's functions as tools"):
        ask(pool, "synthetic-always", twins[0], tools=None)


def test_usage_is_by_length_and_everything_says_synthetic(pool: SyntheticPool) -> None:
    spec = benchmark_tasks("math500", 1, seed=0)[0]

    response = ask(pool, "synthetic-large", spec)

    assert response.system_fingerprint == "synthetic-pool" and response.model.endswith("synthetic-large")
    assert response.usage.prompt_tokens == round(len(spec.text) / 4)
    assert response.usage.completion_tokens == round(len(content(response)) / 4)
    with urllib.request.urlopen(f"{pool.base_url}/models") as listed:  # noqa: S310 - our own server
        models = json.load(listed)["data"]
    assert [m["id"] for m in models] == [m.name for m in CONFIG.models]
    assert all(m["owned_by"] == "synthetic-pool" and m["synthetic"] for m in models)
    assert models[0]["accuracy"]["math"] == 0.9 and models[0]["pricing"]["input_cost_per_mtok"] == 0.5


def test_streaming_gives_the_same_answer(pool: SyntheticPool) -> None:
    spec = benchmark_tasks("gsm8k", 1, seed=9)[0]

    chunks = list(ask(pool, "synthetic-math", spec, stream=True))

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == content(
        ask(pool, "synthetic-math", spec)
    )


def test_an_unknown_prompt_is_a_400_and_an_unknown_model_a_404(pool: SyntheticPool) -> None:
    with pytest.raises(litellm.BadRequestError, match="answers only the benchmark items"):
        litellm.completion(
            model="openai/synthetic-math", api_base=pool.base_url, api_key="k", num_retries=0,
            messages=[{"role": "user", "content": "What is the capital of France?"}],
        )  # fmt: skip
    with pytest.raises(litellm.NotFoundError, match="no model 'gpt-4'"):
        ask(pool, "gpt-4", benchmark_tasks("gsm8k", 1)[0])


def test_the_primitives_find_the_item_whole_or_wrapped(pool: SyntheticPool) -> None:
    """Through the provider layer, as a collection calls it: the answer each primitive reads
    out of the reply passes the checker (long_context wraps the question in its own prompts)."""
    cases = [
        ("gsm8k", "cot"),
        ("math500", "program"),
        ("hotpotqa", "long_context"),
        ("mbpp", "reflexion"),
        ("bfcl", "tool_use"),
    ]
    for benchmark, primitive in cases:
        spec = benchmark_tasks(benchmark, 1, seed=4)[0]
        request = {k: spec.metadata[k] for k in ("tests", "entry_point", "tools") if k in spec.metadata}
        for model, right in (("synthetic-always", True), ("synthetic-never", False)):
            llm = LLMClient(EndpointConfig(model=f"openai/{model}", api_base=pool.base_url, api_key="k", max_retries=0))
            envelope = run_primitive(primitive, llm, PrimitiveInput(prompt=spec.text, item_id=spec.item_id, **request))
            assert envelope.ok and passes(spec, envelope.answer or "") is right, (
                primitive,
                model,
                envelope.error_message,
            )


def test_the_index_places_a_wrapped_task_and_tells_bfcl_twins_apart() -> None:
    index = ItemIndex.of_benchmarks()
    spec = benchmark_tasks("hotpotqa", 1, seed=3)[0]

    assert index.find([{"role": "user", "content": f"Task:\n{spec.text}\n\nProposed answer:\n42"}]) == spec
    assert index.find([{"role": "system", "content": spec.text}]) is None  # a task is a user's message
    twins = index.by_text["What's the area of a circle with a radius of 10?"]
    assert len(twins) == 2
    for twin in twins:
        names = [tool["name"] for tool in twin.metadata["tools"]]
        assert index.find([{"role": "user", "content": twin.text}], ["calculator", *names]) == twin


def test_configs_round_trip_and_bad_ones_are_named() -> None:
    assert config_from_dict(config_to_dict(CONFIG)) == CONFIG
    with pytest.raises(ValueError, match="unknown domain"):
        config_from_dict(
            {"models": [{"name": "m", "accuracy": {"maths": 1}, "input_cost_per_mtok": 1, "output_cost_per_mtok": 1}]}
        )
    with pytest.raises(ValueError, match="outside 0 to 1"):
        config_from_dict(
            {"models": [{"name": "m", "accuracy": {"math": 2}, "input_cost_per_mtok": 1, "output_cost_per_mtok": 1}]}
        )
    with pytest.raises(ValueError, match=r"models\[0\]: needs name"):
        config_from_dict({"models": [{"name": "m"}]})


def test_print_config_writes_the_default_pool(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--print-config", "--latency", "0.5"]) == 0
    printed = config_from_dict(json.loads(capsys.readouterr().out))
    assert printed.models == DEFAULT_CONFIG.models and printed.latency_s == 0.5


def test_it_serves_well_over_100_requests_a_second_and_waits_its_latency(pool: SyntheticPool) -> None:
    specs = benchmark_tasks("hotpotqa", 100, seed=6)
    texts = [spec.text for spec in specs] + [f"Question: {spec.text}\n\nNotes:\n(none)" for spec in specs]
    host, port = pool.httpd.server_address[:2]
    connection = http.client.HTTPConnection(str(host), port)
    started = time.perf_counter()
    for text in texts:  # one keep-alive connection, as a client's pool keeps them
        body = {"model": "synthetic-small", "messages": [{"role": "user", "content": text}]}
        connection.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        assert response.status == 200, response.read()
        response.read()
    rate = len(texts) / (time.perf_counter() - started)
    assert rate >= 100, f"{rate:.0f} requests/s"

    slow = PoolConfig(models=CONFIG.models, latency_s=0.3)
    with SyntheticPool(slow, index=pool.index) as waiting:
        started = time.perf_counter()
        ask(waiting, "synthetic-small", specs[0])
        assert time.perf_counter() - started >= 0.3
