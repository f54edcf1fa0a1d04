"""Waiting for a /v1 chat's run to end, without holding a database connection: on the run's
channel group (`run_wait`), or on the fast path's call (`fast_ended`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from studio.db import releasing
from studio.models import Run
from studio.openai_errors import database_unavailable, run_timed_out
from studio.selectors.chat import run_if_ended
from studio.services import fast_path
from studio.services.events import run_group
from studio.services.fast_path import FastRun
from studio.unavailable import DATABASE_ERRORS

log = logging.getLogger(__name__)

POLL_S = 0.05  # without a channel layer only
RECHECK_S = 2.0  # a run is read again this often in case its `run.finished` notification was lost
# A run given deadline_s ends itself just after it; wait a little longer to report how it ended.
DEADLINE_GRACE_S = 5


def wait_limit_s(deadline_s: int | None) -> float:
    if deadline_s is not None:
        return deadline_s + DEADLINE_GRACE_S
    return float(settings.ORCHESTRA_OPENAI_WAIT_S)


async def _read_ended(run_id: int) -> Run | None:
    try:
        return await sync_to_async(releasing(run_if_ended))(run_id)
    except DATABASE_ERRORS as exc:
        raise database_unavailable(exc, run_id) from None


async def _finished_message(layer: Any, channel: str) -> None:
    """Until the run's group says the run finished (every other event is let by)."""
    while True:
        message = await layer.receive(channel)
        if any(event.get("type") == "run.finished" for event in message.get("events") or ()):
            return


async def run_wait(run_id: int, limit_s: float) -> Run | None:
    """The run once it has ended, or None if it is still going after `limit_s`.

    Woken by the run's channel group (its `run.finished` event), not by polling: the request
    joins the group, then reads the run once (it may have ended before), then reads it again
    when the group says it finished, and every RECHECK_S in case a notification was lost (the
    channel layer is Redis; Postgres holds the truth). Without a channel layer (Redis away) it
    reads the run every POLL_S. A database that cannot be reached is an OpenAIError (503)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    layer, channel = get_channel_layer(), None
    if layer is not None:
        try:
            channel = await layer.new_channel("v1-wait.")
            await layer.group_add(run_group(run_id), channel)
        except Exception:
            log.warning("run %s: no channel layer to wait on; reading the run every %s s", run_id, POLL_S)
            channel = None
    try:
        while True:
            run = await _read_ended(run_id)
            left = deadline - loop.time()
            if run is not None or left <= 0:
                return run
            if channel is None:
                await asyncio.sleep(min(POLL_S, left))
                continue
            try:
                await asyncio.wait_for(_finished_message(layer, channel), timeout=min(RECHECK_S, left))
            except TimeoutError:
                pass
            except Exception:
                log.warning("run %s: the channel layer failed; reading the run every %s s", run_id, POLL_S)
                channel = None
    finally:
        if channel is not None:
            with contextlib.suppress(Exception):
                await layer.group_discard(run_group(run_id), channel)


async def fast_ended(fast: FastRun, limit_s: float) -> Run | None:
    """Make a fast run's call: the run, ended; None when it went on to the full machinery (a
    retry), to be waited for as any run. Past `limit_s` a 504 naming the run: the call goes
    on, on its thread, and the run is recorded when it ends."""
    assert fast.call is not None  # started by chat._prepare
    call = asyncio.wrap_future(fast.call)
    done, _ = await asyncio.wait({call}, timeout=limit_s)
    if not done and fast_path.fast_abandon(fast):
        raise run_timed_out(fast.run.pk, limit_s)
    try:
        await call
    except DATABASE_ERRORS as exc:
        raise database_unavailable(exc, fast.run.pk) from None
    return fast.run if fast.ended else None
