"""Tokens end to end (studio/streaming.py): a model's text reaches a streamed /v1 answer and
the run's channel group as the model writes it, not only when the run ends.

The upstream is the scripted OpenAI-compatible server, which streams its answer in pieces with
a pause between them, so what arrives when is known.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from openai import OpenAI

from providers.scripted_openai import Reply, ScriptedOpenAI
from studio.models import Attempt, ModelPool, Primitive, User
from studio.services.attempts import AttemptWork
from studio.services.events import run_group
from studio.services.pools import endpoint_create
from studio.streaming import DELTA, watch
from tests.factories import PoolFactory, RunFactory
from tests.support.runs import wait_for_run
from workers.execution import execute

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ANSWER = "one two three four five six"
PAUSE_S = 0.3  # between two of its six pieces: the whole answer takes 1.5 s to arrive


class Streaming:
    """Answers ANSWER in six pieces, PAUSE_S apart, when asked to stream; records whether each
    request asked."""

    def __init__(self) -> None:
        self.streamed: list[bool] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.streamed.append(bool(body.get("stream")))
        return Reply(content=ANSWER, prompt_tokens=7, completion_tokens=6, pieces=6, pause_s=PAUSE_S)


def pool_of(server: ScriptedOpenAI) -> ModelPool:
    pool = PoolFactory()
    Primitive.objects.get_or_create(name="direct")
    endpoint_create(
        pool_id=pool.pk, name="scripted", model="openai/scripted", api_base=server.base_url, api_key="sk-test",
        input_cost_per_mtok=1, output_cost_per_mtok=1, primitives=["direct"],
    )  # fmt: skip
    return pool


def ask(base_url: str, token: str, pool: ModelPool, *, stream: bool) -> Any:
    """The raw /v1 response to "Count." on `pool`."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key=token, max_retries=0, timeout=30)
    return client.chat.completions.with_raw_response.create(
        model="orchestra", messages=[{"role": "user", "content": "Count."}], extra_body={"pool": pool.pk},
        stream=stream,
    )  # fmt: skip


def test_a_streamed_request_gets_the_tokens_as_the_model_writes_them(
    asgi_server: str, celery_worker: object, user_token: tuple[User, str]
) -> None:
    script = Streaming()
    with ScriptedOpenAI(script) as server:
        raw = ask(asgi_server, user_token[1], pool_of(server), stream=True)
        began = time.monotonic()
        arrivals: list[tuple[float, str]] = []
        for chunk in raw.parse():
            if chunk.choices and chunk.choices[0].delta.content:
                arrivals.append((time.monotonic() - began, chunk.choices[0].delta.content))
    assert script.streamed == [True]
    assert "".join(text for _, text in arrivals) == ANSWER
    assert len(arrivals) >= 3
    # The first words came while the model was still writing, well before the last.
    assert arrivals[-1][0] - arrivals[0][0] >= 3 * PAUSE_S, arrivals
    run = wait_for_run(int(raw.headers["x-orchestra-run-id"]))
    assert run.final_answer == ANSWER and run.tokens_out == 6


def test_a_request_nobody_streams_is_not_streamed_upstream(
    asgi_server: str, celery_worker: object, user_token: tuple[User, str]
) -> None:
    script = Streaming()
    with ScriptedOpenAI(script) as server:
        completion = ask(asgi_server, user_token[1], pool_of(server), stream=False).parse()
    assert completion.choices[0].message.content == ANSWER
    assert script.streamed == [False]


def test_a_call_nobody_can_watch_is_not_streamed_even_with_its_run_marked() -> None:
    """/v1's fast path calls before its run is written, and a watcher waits for the record: its
    work says so (`watchable=False`), so the executor neither asks the cache nor streams."""
    run = RunFactory()
    watch(run.pk)
    script = Streaming()
    with ScriptedOpenAI(script) as server:
        work = AttemptWork(
            attempt_id=0, model="openai/scripted", api_base=server.base_url, api_key="sk-test",
            input_cost_per_mtok=1.0, output_cost_per_mtok=1.0, primitive="direct", params={},
            request={"prompt": "Count."}, run_id=run.pk, node_key="root", number=1, watchable=False,
        )  # fmt: skip
        envelope = execute(work)
    assert envelope.ok and envelope.answer == ANSWER
    assert script.streamed == [False]


def test_a_watched_runs_calls_stream_to_its_group(settings: Any) -> None:
    """A worker's attempt on a run someone watches (its WebSocket marks it) sends its text to
    the run's channel group in pieces while the call goes on; the pieces make the output."""
    layer = get_channel_layer()
    run = RunFactory()
    watch(run.pk)
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(run_group(run.pk), channel)
    with ScriptedOpenAI(Streaming()) as server:
        work = AttemptWork(
            attempt_id=0, model="openai/scripted", api_base=server.base_url, api_key="sk-test",
            input_cost_per_mtok=1.0, output_cost_per_mtok=1.0, primitive="direct", params={},
            request={"prompt": "Count."}, run_id=run.pk, node_key="root", number=1,
        )  # fmt: skip
        envelope = execute(work)
    assert envelope.ok and envelope.answer == ANSWER and envelope.tokens_out == 6
    pieces: list[dict[str, Any]] = []
    deadline = time.monotonic() + 5
    while "".join(p["text"] for p in pieces) != ANSWER and time.monotonic() < deadline:
        message = async_to_sync(layer.receive)(channel)
        if message["type"] == DELTA:
            pieces.append(message)
    assert "".join(p["text"] for p in pieces) == ANSWER
    assert len(pieces) >= 3  # sent as it came, not once at the end
    assert [p["offset"] for p in pieces] == [sum(len(q["text"]) for q in pieces[:i]) for i in range(len(pieces))]
    assert {(p["node"], p["attempt"], p["primitive"]) for p in pieces} == {("root", 1, "direct")}
    assert not Attempt.objects.exists()  # nothing written: deltas are not events
