"""An evaluation's progress, streamed to the Evaluation page over /ws/evaluations/<id>/ by a
real worker: the page moves with each message and does not poll the evaluation while its
socket is open; at the end it reads the report once."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from playwright.sync_api import Page, Request, WebSocket, expect

from studio.models import EvaluationRun, User
from tests.browser.axe import assert_accessible
from tests.browser.test_studio import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

DETAIL = re.compile(r"/api/evaluations/(\d+)$")
POLL_S = 1.5  # how often the page would read the evaluation without its socket


def test_evaluation_progress_arrives_over_the_socket(page: Page, live_url: str, worker: object, admin: User) -> None:
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
    began = time.monotonic()
    page.get_by_test_id("start-evaluation").click()

    progress = page.get_by_test_id("evaluation-progress")
    expect(progress).to_have_attribute("data-streamed", "true")  # live, not looking again
    assert_accessible(page, "evaluation while it runs")
    status = page.get_by_test_id("evaluation-status")
    expect(status).to_have_attribute("data-status", "succeeded", timeout=240_000)
    took = time.monotonic() - began
    expect(page.get_by_test_id("pareto-plot")).to_be_visible()

    evaluation = EvaluationRun.objects.get()
    assert {frame["kind"] for frame in frames} == {"progress"}
    assert {frame["id"] for frame in frames} == {evaluation.pk}
    steps = [frame["progress"] for frame in frames]
    assert steps == sorted(steps), f"progress moved back: {steps}"
    assert len(set(steps)) >= 3, f"too few steps streamed: {frames}"
    assert frames[-1]["status"] == "succeeded" and frames[-1]["progress"] == 1.0
    assert any(frame["status"] == "running" and 0 < frame["progress"] < 1 for frame in frames)
    # The evaluation was read when it was chosen and once more at its end (the report);
    # polling would have read it every 1.5 s of the run.
    assert took > 3 * POLL_S, f"the evaluation took {took:.1f} s: too short to tell streaming from polling"
    assert len(reads) <= 3, f"the page read the evaluation {len(reads)} times in {took:.0f} s: {reads}"
