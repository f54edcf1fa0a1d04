"""A model's tokens as they arrive, for whoever follows the run.

An attempt is streamed (`providers.llm.token_sink`) when someone follows it:

- a streamed /v1 request answered by the fast path: the call is made in the request's own
  process, and `completion_events` sends the text as content chunks while it grows;
- the run's WebSocket (`/ws/runs/{id}/`, the live tree): a socket marks the run watched in
  the cache (`watch`), and a worker streams the run's real calls while the mark lasts. A run
  started or re-run through the API is marked at once, for the live view that opens next.

Either way the text goes to the run's channel group as `run.delta` messages, at most one per
`FLUSH_S` per attempt: `{"node", "attempt", "primitive", "offset", "text"}` (`offset`: the
characters of the attempt's text before this piece; the calls of one attempt, a retry or a
sample, follow each other after a blank line). Deltas are not events: nothing is written, and
the node's output in its `attempt.finished` event is what counts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.core.cache import cache

from studio.notifier import notifier
from studio.services.events import run_group

log = logging.getLogger(__name__)

FLUSH_S = 0.05
WATCH_S = 60  # a socket's mark lasts this long; it renews it every WATCH_S / 2
DELTA = "run.delta"


def _watch_key(run_id: int) -> str:
    return f"run-watched:{run_id}"


def watch(run_id: int) -> None:
    """Someone follows the run live: its calls are streamed for the next WATCH_S seconds."""
    cache.set(_watch_key(run_id), 1, WATCH_S)


def watch_quietly(run_id: int) -> None:
    """`watch`, where the cache answers: a run started from the studio streams its first calls to
    the live view that opens next (its socket renews the mark); without the cache, it does not."""
    try:
        watch(run_id)
    except Exception:  # the cache is away: the run goes on, its tree fills from the events
        log.warning("could not mark run %s watched", run_id, exc_info=True)


def watched(run_id: int) -> bool:
    try:
        return bool(cache.get(_watch_key(run_id)))
    except Exception:  # the cache is away: nobody can be told anyway
        return False


class RunTokens:
    """One attempt's streamed text (`providers.llm.TokenSink`): kept whole in `text`, sent to the
    run's group, and, where a listener is set (`listen`), woken on each piece."""

    def __init__(self, run_id: int, node: str, attempt: int, primitive: str) -> None:
        self.run_id, self.node, self.attempt, self.primitive = run_id, node, attempt, primitive
        self.text = ""
        self.calls = 0
        self._lock = threading.Lock()
        self._published = 0
        self._flushed_at = 0.0
        self._closed = False
        self._wake: Callable[[], None] | None = None

    def listen(self, wake: Callable[[], None]) -> None:
        self._wake = wake

    def call(self) -> None:
        with self._lock:
            if self._closed:
                return
            self.calls += 1
            if self.text:
                self.text += "\n\n"

    def delta(self, text: str) -> None:
        with self._lock:
            if self._closed:  # a call given up at its deadline goes on reading: drop it
                return
            self.text += text
            due = time.monotonic() - self._flushed_at >= FLUSH_S
        if due:
            self.flush()
        if self._wake is not None:
            self._wake()

    def flush(self) -> None:
        with self._lock:
            offset, piece = self._published, self.text[self._published :]
            self._published, self._flushed_at = len(self.text), time.monotonic()
        if piece:
            message = {"type": DELTA, "node": self.node, "attempt": self.attempt, "primitive": self.primitive,
                       "offset": offset, "text": piece}  # fmt: skip
            notifier.notify(run_group(self.run_id), message)

    def close(self) -> None:
        """The attempt has ended: send what is left; later pieces are dropped."""
        self.flush()
        with self._lock:
            self._closed = True
        if self._wake is not None:
            self._wake()
