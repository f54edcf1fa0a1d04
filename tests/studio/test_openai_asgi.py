"""/v1/'s lean ASGI handler (studio.openai_asgi): the routing, and what its inline middlewares
still do for /v1/ (security headers, the host check, the HTTPS redirect) without Django's chain."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from django.test import override_settings

from studio.openai_asgi import OpenAIHandler, http_router


def scope(path: str, *, host: str = "testserver", method: str = "GET", root_path: str = "") -> dict[str, Any]:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": root_path + path, "raw_path": (root_path + path).encode(), "root_path": root_path,
        "query_string": b"", "headers": [(b"host", host.encode())], "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }  # fmt: skip


async def answer(app: Any, request: dict[str, Any]) -> tuple[int, dict[bytes, bytes], bytes]:
    talk = ApplicationCommunicator(app, request)
    await talk.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await talk.receive_output(10)
    body = b""
    while True:
        message = await talk.receive_output(10)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await talk.wait(10)
    return start["status"], dict(start["headers"]), body


@pytest.mark.asyncio
async def test_v1_goes_to_the_openai_handler_and_the_rest_to_the_pages() -> None:
    seen: list[str] = []

    async def pages(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    app = http_router(pages)
    assert (await answer(app, scope("/api/health")))[0] == 204
    assert (await answer(app, scope("/v1", root_path="/studio")))[0] == 204  # no trailing slash: not /v1/
    status, _, body = await answer(app, scope("/v1/models", root_path="/studio"))
    assert status == 401 and b"invalid_api_key" in body
    assert seen == ["/api/health", "/studio/v1"]


@pytest.mark.asyncio
async def test_a_v1_answer_carries_the_security_headers() -> None:
    status, headers, body = await answer(OpenAIHandler(), scope("/v1/models"))
    assert status == 401 and b'"error"' in body
    assert headers[b"X-Content-Type-Options"] == b"nosniff"
    assert headers[b"X-Frame-Options"] == b"DENY"
    assert headers[b"Referrer-Policy"] == b"same-origin"


@pytest.mark.asyncio
async def test_a_host_not_allowed_is_refused() -> None:
    status, _, _ = await answer(OpenAIHandler(), scope("/v1/models", host="evil.example"))
    assert status == 400


@pytest.mark.asyncio
async def test_plain_http_is_sent_to_https_when_the_settings_say_so() -> None:
    with override_settings(SECURE_SSL_REDIRECT=True):
        handler = OpenAIHandler()  # the middlewares read their settings when made
    status, headers, _ = await answer(handler, scope("/v1/models"))
    assert status == 301 and headers[b"Location"] == b"https://testserver/v1/models"
