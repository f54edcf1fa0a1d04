"""/v1's streamed answer from a streamed call (studio.services.chat_completion.completion_events):
the text goes out as it grows, the rest of the answer after, and an answer the run did not keep
ends in an error, never in a wrong answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async

from studio.models import Run, RunStatus
from studio.services.chat_completion import Completion, completion_events
from studio.streaming import RunTokens
from tests.factories import RunFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def stream(run: Run, pieces: list[str], final: str, retried: bool = False) -> list[Any]:
    tokens = RunTokens(run.pk, "root", 1, "direct")

    async def call() -> Run:
        tokens.call()
        for piece in pieces:
            tokens.delta(piece)
            await asyncio.sleep(0.01)
        if retried:
            tokens.call()
            tokens.delta("again")
        run.status, run.final_answer = RunStatus.SUCCEEDED, final
        return run

    reply = Completion(run, "orchestra")
    return [data async for kind, data in completion_events(run, reply, 5, False, call(), tokens) if kind == "data"]


def contents(events: list[Any]) -> str:
    return "".join(
        e["choices"][0]["delta"].get("content") or "" for e in events if isinstance(e, dict) and e.get("choices")
    )


async def test_the_text_goes_out_as_it_grows_and_the_answer_is_whole() -> None:
    run = await database_sync_to_async(RunFactory)()
    events = await stream(run, ["  The ans", "wer is", " 42.\n"], "The answer is 42.")
    assert contents(events) == "The answer is 42."
    assert (
        sum(1 for e in events if isinstance(e, dict) and e.get("choices") and e["choices"][0]["delta"].get("content"))
        >= 2
    )
    assert events[-1] == "[DONE]"


async def test_an_answer_the_run_did_not_keep_ends_in_an_error() -> None:
    run = await database_sync_to_async(RunFactory)()
    events = await stream(run, ["partial", " text"], "Another pair's answer.")
    assert contents(events).startswith("partial")
    error = events[-1]["error"]
    assert error["code"] == "answer_changed" and f"run {run.pk} answered with another pair" in error["message"]


async def test_after_a_retry_the_stream_waits_for_the_answer() -> None:
    """A second call of the attempt (a retry) makes the text no longer one answer: nothing more
    is streamed from it, and the run's answer completes what was sent."""
    run = await database_sync_to_async(RunFactory)()
    events = await stream(run, ["Fine"], "Fine, thanks.", retried=True)
    assert contents(events) == "Fine, thanks."
