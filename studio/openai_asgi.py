"""/v1's requests through Django's request and response, without the per-request costs that
only the pages need.

Django's ASGI handler runs each hook of a sync-only middleware (every `MiddlewareMixin`:
security, sessions, CSRF, messages...) through `sync_to_async`, two thread hops a middleware,
and sends `request_started` and `request_finished` through two more: about a dozen hops for
every request, a few milliseconds on a busy machine, more than the rest of /v1's work.

/v1 takes a bearer token only: no session, cookie, CSRF token or message. So its requests go
to `OpenAIHandler`, whose chain is the three middlewares whose hooks do no I/O (security's
headers and HTTPS redirect, the host check and user-agent ban, the frame header), called in
the event loop. Nor does it start a thread for each request (Django's `ThreadSensitiveContext`):
the views' short database work runs on the process's one thread for it (`sync_to_async`), and
each piece of it hands its connection back (`studio.db.releasing`), which is what
`request_finished` does for the pages; the fast path's calls have threads of their own
(`studio.services.fast_path`). Everything else is Django's: the request object, the URL
resolver, the exception responses, the disconnect handling and the response's sending.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import set_script_prefix

PREFIX = "/v1/"
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]


def _never(request: HttpRequest) -> HttpResponseBase:
    raise AssertionError("the inline middlewares' hooks are called one by one")


class OpenAIHandler(ASGIHandler):
    """Django's ASGI handler for /v1/: its middlewares' hooks inline, no request signals."""

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        inline = [SecurityMiddleware(_never), CommonMiddleware(_never), XFrameOptionsMiddleware(_never)]
        self._on_request = [m.process_request for m in inline if hasattr(m, "process_request")]
        self._on_response = [m.process_response for m in reversed(inline) if hasattr(m, "process_response")]
        self._middleware_chain = convert_exception_to_response(self._respond)

    async def _respond(self, request: HttpRequest) -> HttpResponseBase:
        response = None
        for hook in self._on_request:
            response = hook(request)
            if response is not None:
                break
        else:
            response = await self._get_response_async(request)  # type: ignore[attr-defined]  # not in the stubs
        for after in self._on_response:
            response = after(request, response)
        return response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            set_script_prefix(get_script_prefix(scope))
            request, refused = self.create_request(scope, body)
            if request is None:
                assert refused is not None
                await self.send_response(refused, send)
                return
            answer = asyncio.create_task(self._answer(request, send))
            gone = asyncio.create_task(self.listen_for_disconnect(receive))
            await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not answer.done():  # the client went away: the view may clean up
                answer.cancel()
            gone.cancel()
            for task in (answer, gone):
                with contextlib.suppress(asyncio.CancelledError, RequestAborted):
                    await task
        finally:
            body.close()

    async def _answer(self, request: HttpRequest, send: Send) -> None:
        response = await self.get_response_async(request)
        try:
            await self.send_response(response, send)
        finally:
            for close in response._resource_closers:  # type: ignore[attr-defined]  # response.close(), less request_finished
                close()


def http_router(pages: Callable[..., Awaitable[None]]) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """/v1/ to `OpenAIHandler`, everything else to `pages` (Django's own handler)."""
    openai = OpenAIHandler()

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        handler = openai if scope["path"].removeprefix(scope.get("root_path", "")).startswith(PREFIX) else pages
        await handler(scope, receive, send)

    return route
