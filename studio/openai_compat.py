"""An OpenAI-compatible endpoint at /v1/: a chat completion becomes a task and a run.

- `POST /v1/chat/completions`, model `orchestra` (the default policy) or `orchestra/<policy>`:
  the last user message becomes a task, a run of it starts on a pool, and the response
  is the run's final answer once it ends (or, with `stream: true`, server-sent events).
  The messages around it, `tools`, `tool_choice` and `response_format` ride with the task
  (`providers.conversation`), and tool calls come back as `message.tool_calls`.
- `GET /v1/models` and `GET /v1/models/<id>`: the models above, one per policy.

Authentication is the API bearer token only (no session, no CSRF). Errors have OpenAI's
shape, `{"error": {"message", "type", "param", "code"}}`. The views are async: a waiting
request holds no server thread, it polls the run's row every POLL_S seconds, and no database
connection between polls. A database that cannot be reached is a 503 (code
`database_unavailable`), with the run's id once the run exists.

This module is the HTTP layer: the bearer token, the status codes and the event stream's
framing. `studio.openai_schemas` parses the request body; `studio.services.chat` reads the
conversation and writes the task and the run; `studio.services.chat_wait` waits for the run;
`studio.services.chat_completion` builds the completion and its chunks; `studio.selectors.chat`
reads the models, the pool and the ended run; `studio.openai_errors` has the errors and their
responses.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

from studio.db import releasing
from studio.errors import ApplicationError
from studio.models import RunStatus, User
from studio.not_found import v1_not_found
from studio.openai_errors import (
    RUN_HEADER,
    OpenAIError,
    database_unavailable,
    error_response,
    run_ended_badly,
    run_timed_out,
)
from studio.selectors.chat import model_card, model_ids, policy_of
from studio.services.chat import bearer_user, chat_start
from studio.services.chat_completion import Completion, Event, completion_events
from studio.services.chat_wait import fast_ended, run_wait, wait_limit_s
from studio.services.fast_path import fast_streamed
from studio.unavailable import DATABASE_ERRORS

View = Callable[..., Coroutine[Any, Any, HttpResponseBase]]


async def authenticate(request: HttpRequest) -> User:
    return await sync_to_async(releasing(bearer_user))(request.headers.get("Authorization", ""))


def openai_view(method: str, *, authenticates: bool = False) -> Callable[[View], View]:
    """A bearer-token view for `method` whose errors, ours or a service's, have OpenAI's shape.
    A view that `authenticates` checks the token itself (with the rest of its first database
    work, in one thread hop), and gets no user."""

    def decorate(handler: View) -> View:
        @csrf_exempt
        @functools.wraps(handler)
        async def view(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
            try:
                if request.method != method:
                    raise OpenAIError(405, f"Use {method} for {request.path}.", code="method_not_allowed")
                user = None if authenticates else await authenticate(request)
                return await handler(request, user, **kwargs)
            except DATABASE_ERRORS as exc:
                return error_response(database_unavailable(exc))
            except ApplicationError as exc:
                response = error_response(exc)
                if exc.status == 405:
                    response["Allow"] = method
                return response

        return view

    return decorate


@openai_view("GET")
async def list_models(request: HttpRequest, user: User) -> HttpResponseBase:
    return JsonResponse({"object": "list", "data": [model_card(model_id) for model_id in model_ids()]})


@openai_view("GET")
async def get_model(request: HttpRequest, user: User, model: str) -> HttpResponseBase:
    policy_of(model)
    return JsonResponse(model_card(model))


def sse(events: AsyncIterator[Event]) -> AsyncIterator[str]:
    """Server-sent events: `data:` lines (JSON, or "[DONE]"), `:` comments."""

    async def framed() -> AsyncIterator[str]:
        async for kind, data in events:
            if kind == "comment":
                yield f": {data}\n\n"
            else:
                yield f"data: {data if isinstance(data, str) else json.dumps(data, separators=(',', ':'))}\n\n"

    return framed()


@openai_view("POST", authenticates=True)
async def chat_completions(request: HttpRequest, _: None) -> HttpResponseBase:
    """Run the last user message as a task; answer with the run's final answer."""
    started = await chat_start(request)
    chat, run, fast = started.chat, started.run, started.fast
    assert run is not None  # chat_start gives it
    reply, limit_s = Completion(run, chat.model, tools=bool(chat.tools)), wait_limit_s(chat.deadline_s)
    if chat.stream:
        include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
        start = fast_ended(fast, limit_s) if fast is not None else None
        events = sse(completion_events(run, reply, limit_s, include_usage, start, fast_streamed(fast)))
        response: HttpResponseBase = StreamingHttpResponse(events, content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    else:
        begun = time.monotonic()
        ended = await fast_ended(fast, limit_s) if fast is not None else None
        if ended is None:  # the full machinery's run, or a fast run handed over: the rest of the limit
            ended = await run_wait(run.pk, limit_s - (time.monotonic() - begun))
        if ended is None:
            raise run_timed_out(run.pk, limit_s)
        if ended.status != RunStatus.SUCCEEDED:
            raise run_ended_badly(ended)
        response = JsonResponse(reply.completion(ended))
    response[RUN_HEADER] = str(run.pk)
    return response


urlpatterns = [
    path("chat/completions", chat_completions, name="openai-chat-completions"),
    path("models", list_models, name="openai-models"),
    path("models/<path:model>", get_model, name="openai-model"),
    re_path(r"", v1_not_found),  # any other path: OpenAI's error shape, not Django's HTML page
]
