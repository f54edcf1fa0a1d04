"""WebSocket consumers. They only relay: authorize, replay from Postgres, then go live."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from studio import fast_intents
from studio.models import Run, RunEvent, User
from studio.permissions import can_read_run, can_see_everything
from studio.services.events import event_message, run_group
from studio.services.jobs import job_group
from studio.streaming import WATCH_S, watch

# Close codes (4000-4999 are the application's): a browser can tell why it was refused.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
REPLAY_BATCH = 500


async def refuse(consumer: AsyncJsonWebsocketConsumer, code: int) -> None:
    """Close with `code`, after accepting: a close before the handshake completes reaches the
    client as an HTTP 403 rejection (the server has no other way to say no then), and a
    browser's WebSocket sees only 1006, so it could not tell "not signed in" from "retry"."""
    await consumer.accept()
    await consumer.close(code=code)


@database_sync_to_async
def _may_watch(user: User, run_id: int) -> bool:
    run = Run.objects.filter(pk=run_id).only("id", "owner_id").first()
    return run is not None and can_read_run(user, run)


async def _recorded(run_id: int) -> None:
    """Once a run that /v1's fast path answered is written, if it is being written
    (`studio.fast_intents`); waited for on a thread of its own, not the consumers' shared
    database thread, for ORCHESTRA_FAST_READ_WAIT_S at most."""
    await sync_to_async(fast_intents.wait_recorded, thread_sensitive=False)(run_id)


@database_sync_to_async
def _events_after(run_id: int, after: int) -> list[dict[str, Any]]:
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:REPLAY_BATCH]
    return [event_message(row) for row in rows]


def _after(query_string: bytes) -> int:
    values = parse_qs(query_string.decode("latin-1")).get("after", ["0"])
    try:
        return max(0, int(values[0]))
    except ValueError:
        return 0


class RunConsumer(AsyncJsonWebsocketConsumer):
    """`/ws/runs/<id>/?after=<seq>`: the run's events after `seq`, then every new one.

    The owner, a researcher or an admin may join. Each event is sent once and in
    order: the consumer joins the group before it replays, and drops any live event
    it has already sent.
    """

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if user is None or not user.is_authenticated:
            await refuse(self, CLOSE_UNAUTHENTICATED)
            return
        if not await _may_watch(user, self.run_id):
            # Being written (waited for), or written between the read and the question: ask again.
            await _recorded(self.run_id)
            if not await _may_watch(user, self.run_id):
                await refuse(self, CLOSE_FORBIDDEN)
                return
        self.group = run_group(self.run_id)
        self.last_seq = _after(self.scope.get("query_string", b""))
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.watching = asyncio.ensure_future(self._watch())
        await self._replay()

    async def _watch(self) -> None:
        """Mark the run watched while the socket is open, so that its calls stream their
        tokens here (`run.delta`, studio/streaming.py)."""
        while True:
            with contextlib.suppress(Exception):  # the cache is away: the tree still gets the events
                await sync_to_async(watch, thread_sensitive=False)(self.run_id)
            await asyncio.sleep(WATCH_S / 2)

    async def _replay(self) -> None:
        while True:
            batch = await _events_after(self.run_id, self.last_seq)
            for message in batch:
                await self._emit(message)
            if len(batch) < REPLAY_BATCH:
                return

    async def _emit(self, message: dict[str, Any]) -> None:
        self.last_seq = message["seq"]
        await self.send_json({"kind": "event", **message})

    async def run_events(self, content: dict[str, Any]) -> None:
        """A `run.events` message from the channel layer: the events one transaction wrote, in order."""
        for message in content["events"]:
            if message["seq"] <= self.last_seq:
                continue  # already sent by the replay
            if message["seq"] > self.last_seq + 1:
                # A notification was missed: fill the gap from Postgres, in order.
                await self._replay()
            if message["seq"] > self.last_seq:
                await self._emit(message)

    async def run_delta(self, content: dict[str, Any]) -> None:
        """A `run.delta` message: the next piece of a call's text as the model writes it (not an
        event: no seq, nothing stored; the node's events carry its output)."""
        await self.send_json({"kind": "delta", **{k: v for k, v in content.items() if k != "type"}})

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "watching"):
            self.watching.cancel()
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen; anything they send is ignored."""


@database_sync_to_async
def _training_snapshot(user: User, job_id: int) -> dict[str, Any] | None:
    """The job as it stands, if the user may watch it (researchers and admins)."""
    from studio.models import TrainingJob

    if not can_see_everything(user):
        return None
    job = TrainingJob.objects.filter(pk=job_id).first()
    if job is None:
        return None
    return job.progress_message()


@database_sync_to_async
def _evaluation_snapshot(user: User, evaluation_id: int) -> dict[str, Any] | None:
    """The evaluation as it stands, if the user may watch it (researchers and admins)."""
    from studio.models import EvaluationRun

    if not can_see_everything(user):
        return None
    run = EvaluationRun.objects.filter(pk=evaluation_id).first()
    return run.progress_message() if run is not None else None


class JobConsumer(AsyncJsonWebsocketConsumer):
    """A background job's progress, for researchers and admins: the job as it stands, then each
    update. Progress is a state, not a log: a client that reconnects gets the latest. It joins
    the job's group before it reads the job, so no update falls between the two."""

    url_kwarg = "job_id"  # the job's id in the route

    def group_of(self, job_id: int) -> str:
        raise NotImplementedError

    async def snapshot(self, user: User, job_id: int) -> dict[str, Any] | None:
        raise NotImplementedError

    async def connect(self) -> None:
        user = self.scope.get("user")
        job_id = int(self.scope["url_route"]["kwargs"][self.url_kwarg])
        if user is None or not user.is_authenticated:
            await refuse(self, CLOSE_UNAUTHENTICATED)
            return
        self.group = self.group_of(job_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        snapshot = await self.snapshot(user, job_id)
        if snapshot is None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            del self.group
            await refuse(self, CLOSE_FORBIDDEN)
            return
        await self.accept()
        await self.send_json({"kind": "progress", **snapshot})

    async def send_progress(self, content: dict[str, Any]) -> None:
        await self.send_json({"kind": "progress", **{k: v for k, v in content.items() if k != "type"}})

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen; anything they send is ignored."""


class TrainingConsumer(JobConsumer):
    """`/ws/training/<id>/`: a training job's progress (event_schemas.TrainingProgress)."""

    def group_of(self, job_id: int) -> str:
        from studio.models import TrainingJob

        return job_group(TrainingJob, job_id)

    async def snapshot(self, user: User, job_id: int) -> dict[str, Any] | None:
        return await _training_snapshot(user, job_id)

    async def training_progress(self, content: dict[str, Any]) -> None:
        """A `training.progress` message from the channel layer."""
        await self.send_progress(content)


class EvaluationConsumer(JobConsumer):
    """`/ws/evaluations/<id>/`: an evaluation's progress (event_schemas.EvaluationProgress)."""

    url_kwarg = "evaluation_id"

    def group_of(self, job_id: int) -> str:
        from studio.models import EvaluationRun

        return job_group(EvaluationRun, job_id)

    async def snapshot(self, user: User, job_id: int) -> dict[str, Any] | None:
        return await _evaluation_snapshot(user, job_id)

    async def evaluation_progress(self, content: dict[str, Any]) -> None:
        """An `evaluation.progress` message from the channel layer."""
        await self.send_progress(content)
