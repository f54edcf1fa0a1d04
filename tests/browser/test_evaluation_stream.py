"""An evaluation's progress, streamed to the Evaluation page over /ws/evaluations/<id>/ by a
real worker: the page moves with each message and does not poll the evaluation while its
socket is open; at the end it reads the report once.

The evaluation waits in the queue for a few seconds first (the worker starts later), so
that polling, were the page to poll, would show whatever the evaluation's own speed."""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

import numpy as np
import pytest
from playwright.sync_api import Page, Request, WebSocket, expect

from studio.models import EvaluationRun, User
from tests.browser.axe import assert_accessible
from tests.browser.test_studio import sign_in
from tests.support.worker import running_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

DETAIL = re.compile(r"/api/evaluations/(\d+)$")
POLL_S = 1.5  # how often the page would read the evaluation without its socket
QUEUED_S = 3 * POLL_S


def seeded_vectors(texts: list[str], **_: Any) -> np.ndarray:
    """Stand-in vectors: what this test watches is the stream, not the embedding, and a cold
    cache would make MiniLM embed 601 prompts in this process first. (The failures once blamed on
    that embedding were the channel layer's read timeout: tests/integration/test_channel_layer.py.)"""
    vectors = np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=384) for t in texts])
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_evaluation_progress_arrives_over_the_socket(
    page: Page, live_url: str, admin: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    baselines = ("knn", "cluster", "cascade")
    for where in ("orchestrator.embedding", *(f"orchestrator.baselines.{name}" for name in baselines)):
        monkeypatch.setattr(f"{where}.embed", seeded_vectors)
    frames: list[dict[str, Any]] = []
    reads: list[str] = []

    def on_socket(socket: WebSocket) -> None:
        if "/ws/evaluations/" in socket.url:
            socket.on("framereceived", lambda payload: frames.append(json.loads(payload)))

    def on_request(request: Request) -> None:
        if request.method == "GET" and DETAIL.search(request.url):
            reads.append(request.url)

    page.on("websocket", on_socket)
    page.on("request", on_request)
    sign_in(page, live_url, admin, then="/evaluation")
    page.get_by_label("Outcomes").select_option("reflexion.jsonl.gz")
    page.get_by_test_id("start-evaluation").click()

    # Queued, no worker yet: the page waits on its socket and does not read the evaluation again.
    status = page.get_by_test_id("evaluation-status")
    expect(status).to_have_attribute("data-status", "queued")
    expect(page.get_by_test_id("evaluation-progress")).to_have_attribute("data-streamed", "true")
    page.wait_for_timeout(QUEUED_S * 1000)
    assert len(reads) == 1, f"the page read the queued evaluation {len(reads)} times in {QUEUED_S} s: {reads}"
    assert_accessible(page, "evaluation while it waits")

    with running_worker(concurrency=2):
        expect(status).to_have_attribute("data-status", "succeeded", timeout=240_000)
        expect(page.get_by_test_id("pareto-plot")).to_be_visible()

    evaluation = EvaluationRun.objects.get()
    assert frames[0]["status"] == "queued"
    assert {frame["kind"] for frame in frames} == {"progress"}
    assert {frame["id"] for frame in frames} == {evaluation.pk}
    steps = [frame["progress"] for frame in frames]
    assert steps == sorted(steps), f"progress moved back: {steps}"
    assert len(set(steps)) >= 3, f"too few steps streamed: {frames}"
    assert frames[-1]["status"] == "succeeded" and frames[-1]["progress"] == 1.0
    assert any(frame["status"] == "running" and 0 < frame["progress"] < 1 for frame in frames)
    # Read when it was chosen, and again at its end (for the report).
    assert len(reads) <= 3, f"the page read the evaluation {len(reads)} times: {reads}"
