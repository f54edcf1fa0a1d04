"""/v1 as the clients people use meet it, on a live server (uvicorn) with a real Celery worker
and the scripted OpenAI-compatible server as the pool's model: the official `openai` client
(sync, async, streaming) with a multi-turn history and tools, `response_format`, litellm as a
client, and LangChain's ChatOpenAI. The scripted server records what the upstream received."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import litellm
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from providers.scripted_openai import Reply, ScriptedOpenAI
from studio.models import Admissibility, Primitive, Run, User
from studio.services.pools import endpoint_create
from studio.services.tokens import token_create
from tests.factories import PoolFactory, UserFactory
from tests.integration.test_openai_compat import scripted_pool
from tests.support.runs import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
HISTORY: Any = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "Which city is the capital of France?"},
    {"role": "assistant", "content": "Paris"},
    {"role": "user", "content": "And of Italy?"},
]


@pytest.fixture
def token(db: None, celery_worker: object) -> str:
    return token_create(user=UserFactory(), name="clients")[1]


def conversation_script(body: dict[str, Any]) -> Reply:
    """Tool calls when offered tools and no tool result came back yet; else a word, or the JSON asked for."""
    roles = [m["role"] for m in body["messages"]]
    if body.get("tools") and "tool" not in roles:
        return Reply(content=None, tool_calls=[{"id": "call_1", "name": "get_weather", "arguments": {"city": "Rome"}}],
                     finish_reason="tool_calls")  # fmt: skip
    if body.get("response_format"):
        return Reply(content=json.dumps({"city": "Rome", "sunny": "tool" in roles}))
    return Reply(content="Rome")


def test_the_openai_client_sends_the_whole_history_and_the_upstream_receives_it(asgi_server: str, token: str) -> None:
    with ScriptedOpenAI(conversation_script) as server:
        pool = scripted_pool(server)
        client = OpenAI(base_url=f"{asgi_server}/v1", api_key=token, max_retries=0, timeout=60)
        reply = client.chat.completions.create(model="orchestra", messages=HISTORY, extra_body={"pool": pool.name})

    assert reply.choices[0].message.content == "Rome"
    (sent,) = server.requests
    # Every earlier message, in order, before the task; the system message first.
    assert [(m["role"], m["content"]) for m in sent["messages"]] == [(m["role"], m["content"]) for m in HISTORY]
    run = Run.objects.select_related("task").get()
    assert run.task.text == "And of Italy?"


def test_tools_come_back_as_tool_calls_and_the_tool_result_turn_finishes(asgi_server: str, token: str) -> None:
    ask: Any = [{"role": "user", "content": "What is the weather in Rome?"}]
    with ScriptedOpenAI(conversation_script) as server:
        pool = scripted_pool(server)
        client = OpenAI(base_url=f"{asgi_server}/v1", api_key=token, max_retries=0, timeout=60)
        first = client.chat.completions.create(
            model="orchestra", messages=ask, tools=[WEATHER], tool_choice="auto", extra_body={"pool": pool.name}
        )
        message = first.choices[0].message
        assert first.choices[0].finish_reason == "tool_calls" and message.content is None
        assert message.tool_calls is not None
        (call,) = message.tool_calls
        assert call.type == "function"
        assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
            "call_1", "get_weather", {"city": "Rome"},
        )  # fmt: skip
        # The client runs the tool and sends its result back: the upstream gets the whole turn.
        turn = [
            *ask,
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
        ]
        second = client.chat.completions.create(
            model="orchestra", messages=turn, tools=[WEATHER], extra_body={"pool": pool.name}
        )
    assert second.choices[0].message.content == "Rome" and second.choices[0].finish_reason == "stop"
    first_sent, second_sent = server.requests
    assert first_sent["tools"] == [WEATHER] and first_sent["tool_choice"] == "auto"
    assert [m["role"] for m in second_sent["messages"]] == ["user", "assistant", "tool"]
    assert second_sent["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert second_sent["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}


def test_the_async_client_streams_tool_calls_and_text(asgi_server: str, token: str) -> None:
    async def chat(pool: str) -> tuple[list[Any], str]:
        client = AsyncOpenAI(base_url=f"{asgi_server}/v1", api_key=token, max_retries=0, timeout=60)
        stream: Any = await client.chat.completions.create(
            model="orchestra", messages=[{"role": "user", "content": "Weather in Rome?"}], tools=[WEATHER],
            stream=True, extra_body={"pool": pool},
        )  # fmt: skip
        calls: list[Any] = []
        finish = ""
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.tool_calls:
                calls += chunk.choices[0].delta.tool_calls
            if chunk.choices and chunk.choices[0].finish_reason:
                finish = chunk.choices[0].finish_reason
        texts = []
        again: Any = await client.chat.completions.create(
            model="orchestra", messages=HISTORY, stream=True, extra_body={"pool": pool}
        )
        async for chunk in again:
            if chunk.choices and chunk.choices[0].delta.content:
                texts.append(chunk.choices[0].delta.content)
        return calls, finish + ":" + "".join(texts)

    with ScriptedOpenAI(conversation_script) as server:
        calls, ended = asyncio.run(chat(scripted_pool(server).name))
    assert ended == "tool_calls:Rome"
    assert [(c.index, c.id, c.function.name if c.function else None) for c in calls] == [(0, "call_1", "get_weather")]


def test_a_response_format_goes_to_the_upstream_and_an_answer_that_breaks_it_fails(
    asgi_server: str, token: str
) -> None:
    schema: Any = {
        "type": "json_schema",
        "json_schema": {
            "name": "weather",
            "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    with ScriptedOpenAI(conversation_script) as server:
        pool = scripted_pool(server)
        client = OpenAI(base_url=f"{asgi_server}/v1", api_key=token, max_retries=0, timeout=60)
        good = client.chat.completions.create(
            model="orchestra", messages=[{"role": "user", "content": "Rome's weather as JSON"}], response_format=schema,
            extra_body={"pool": pool.name},
        )  # fmt: skip
        assert json.loads(good.choices[0].message.content or "") == {"city": "Rome", "sunny": False}
        assert server.requests[0]["response_format"] == schema
        needs_number: Any = {**schema, "json_schema": {"name": "n", "schema": {"type": "number"}}}
        with pytest.raises(openai.APIStatusError) as failed:
            client.chat.completions.create(
                model="orchestra", messages=[{"role": "user", "content": "Rome's weather as a number"}],
                response_format=needs_number, extra_body={"pool": pool.name},
            )  # fmt: skip
    assert failed.value.status_code == 502
    run = wait_for_run(int(failed.value.response.headers["x-orchestra-run-id"]))  # written after the answer
    assert run.status == "failed"
    attempt = run.nodes.get(key="root").attempts.get()
    assert "breaks the response_format" in attempt.error_message


def test_tools_on_a_pool_without_a_direct_pair_are_refused(asgi_server: str, token: str) -> None:
    pool = PoolFactory(name="cot-only")
    endpoint = endpoint_create(pool_id=pool.pk, name="m", model="openai/m", api_base="http://127.0.0.1:9/v1")
    Admissibility.objects.create(endpoint=endpoint, primitive=Primitive.objects.get_or_create(name="cot")[0])
    client = OpenAI(base_url=f"{asgi_server}/v1", api_key=token, max_retries=0, timeout=60)
    with pytest.raises(openai.UnprocessableEntityError, match="no admissible direct pair"):
        client.chat.completions.create(
            model="orchestra",
            messages=[{"role": "user", "content": "hi"}],
            tools=[WEATHER],
            extra_body={"pool": pool.name},
        )
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"tool_choice": "auto"}, "tool_choice"),
        ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]}, "tools.0.function.name"),
        ({"response_format": {"type": "yaml"}}, "response_format.type"),
        ({"response_format": {"type": "json_schema"}}, "response_format"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages.0.role"),
    ],
)
def test_bad_chat_parameters_are_a_400_naming_them(
    asgi_server: str, token: str, extra: dict[str, Any], param: str
) -> None:
    client = OpenAI(base_url=f"{asgi_server}/v1", api_key=token, max_retries=0, timeout=60)
    body: Any = {"messages": [{"role": "user", "content": "hi"}], **extra}
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="orchestra", **body)
    assert refused.value.param == param


def test_litellm_and_langchain_are_clients_too(asgi_server: str, token: str) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    with ScriptedOpenAI(conversation_script) as server:
        pool = scripted_pool(server)
        via_litellm = litellm.completion(
            model="openai/orchestra", api_base=f"{asgi_server}/v1", api_key=token, messages=HISTORY,
            extra_body={"pool": pool.name}, num_retries=0,
        )  # fmt: skip
        chat = ChatOpenAI(
            model="orchestra", base_url=f"{asgi_server}/v1", api_key=SecretStr(token), max_retries=0,
            extra_body={"pool": pool.name},
        )  # fmt: skip
        said = chat.invoke([SystemMessage("You answer in one word."), HumanMessage("Capital of France?"),
                            AIMessage("Paris"), HumanMessage("And of Italy?")])  # fmt: skip
        tooled = chat.bind_tools([WEATHER]).invoke("Weather in Rome?")
    assert via_litellm.choices[0].message.content == "Rome"
    assert said.content == "Rome"
    assert [call["name"] for call in tooled.tool_calls] == ["get_weather"]
    assert [m["role"] for m in server.requests[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert User.objects.count() == 1
