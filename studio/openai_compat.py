"""An OpenAI-compatible endpoint at /v1/: a chat completion becomes a task and a run.

- `POST /v1/chat/completions`, model `orchestra` (the default policy) or `orchestra/<policy>`:
  the last user message becomes a task, a run of it starts on a pool, and the response
  is the run's final answer once it ends (or, with `stream: true`, server-sent events).
  The messages around it, `tools`, `tool_choice` and `response_format` ride with the task
  (`workers.conversation`), and tool calls come back as `message.tool_calls`.
- `GET /v1/models` and `GET /v1/models/<id>`: the models above, one per policy.

Authentication is the API bearer token only (no session, no CSRF). Errors have OpenAI's
shape, `{"error": {"message", "type", "param", "code"}}`. The views are async: a waiting
request holds no server thread, it polls the run's row every POLL_S seconds, and no database
connection between polls. A database that cannot be reached is a 503 (code
`database_unavailable`), with the run's id once the run exists.

This module is the HTTP layer: the bearer token, the request body, the status codes and the
event stream. `studio.services.chat` writes the task and the run, waits for the run and
builds the completion; `studio.selectors.chat` reads the models, the pool and the ended run;
`studio.openai_errors` has the errors and their responses.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from decimal import Decimal
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from studio.errors import ApplicationError
from studio.models import Run, RunStatus, User
from studio.openai_errors import (
    RUN_HEADER,
    OpenAIError,
    database_unavailable,
    error_body,
    error_response,
    run_ended_badly,
    run_timed_out,
)
from studio.selectors.chat import model_card, model_ids, policy_of
from studio.services.chat import Completion, chat_submit, run_wait, wait_limit_s
from studio.services.tokens import token_user
from studio.storable import UnstorableText, check_storable
from studio.unavailable import DATABASE_ERRORS

# An SSE comment this often while a streamed run works, so that proxies keep the connection.
KEEPALIVE_S = 15.0
CHUNK_CHARS = 64

View = Callable[..., Coroutine[Any, Any, HttpResponseBase]]


async def authenticate(request: HttpRequest) -> User:
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        raise OpenAIError(
            401,
            "You didn't provide an API key. Send an API token as 'Authorization: Bearer <token>' "
            "(create one with POST /api/tokens).",
            code="invalid_api_key",
        )
    user = await sync_to_async(token_user)(raw=raw.strip())
    if user is None:
        raise OpenAIError(401, "Incorrect API key provided: it is unknown or revoked.", code="invalid_api_key")
    return user


def openai_view(method: str) -> Callable[[View], View]:
    """A bearer-token view for `method` whose errors, ours or a service's, have OpenAI's shape."""

    def decorate(handler: View) -> View:
        @csrf_exempt
        @functools.wraps(handler)
        async def view(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
            try:
                if request.method != method:
                    raise OpenAIError(405, f"Use {method} for {request.path}.", code="method_not_allowed")
                user = await authenticate(request)
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


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="allow")  # name, tool_calls, tool_call_id, ...: passed on as sent
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None


class FunctionIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["function"]
    function: FunctionIn


class ToolChoiceFunction(BaseModel):
    name: str


class ToolChoiceIn(BaseModel):
    type: Literal["function"]
    function: ToolChoiceFunction


class JsonSchemaIn(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")
    strict: bool | None = None


class ResponseFormatIn(BaseModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaIn | None = None


class StreamOptions(BaseModel):
    include_usage: bool | None = None


class ChatIn(BaseModel):
    """OpenAI's request body plus Orchestra's run options; other OpenAI parameters are ignored."""

    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[MessageIn] = Field(min_length=1)
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    pool: int | str | None = Field(None, description="a pool's id or name")
    cost_preference: float | None = Field(None, ge=0, le=100)
    preset: Literal["cheap", "balanced", "best"] | None = None
    best_of: int = Field(1, ge=1, le=16)
    max_cost_usd: Annotated[Decimal, Field(ge=0, max_digits=16, decimal_places=8)] | None = None
    deadline_s: int | None = Field(None, ge=1, le=86_400)
    decomposable: bool = False
    policy_config: dict[str, Any] | None = None
    tools: list[ToolIn] | None = Field(None, max_length=128)
    tool_choice: Literal["none", "auto", "required"] | ToolChoiceIn | None = None
    response_format: ResponseFormatIn | None = None


def chat_parse(request: HttpRequest) -> ChatIn:
    try:
        data = json.loads(request.body)
    except RequestDataTooBig:
        raise OpenAIError(413, "The request body is too large.", code="request_too_large") from None
    except ValueError:
        raise OpenAIError(400, "The request body is not valid JSON.", code="invalid_json") from None
    except RecursionError:
        raise OpenAIError(400, "The request body is nested too deeply.", code="invalid_json") from None
    try:
        check_storable(data)
    except UnstorableText as exc:
        raise OpenAIError(400, str(exc)) from None
    try:
        return ChatIn.model_validate(data)
    except ValidationError as exc:
        # Name the field and the rule, never echo the input.
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        where = f"{field}: " if field else ""
        raise OpenAIError(400, f"Invalid request: {where}{first['msg']}.", param=field) from None


def last_user_text(messages: list[MessageIn]) -> str:
    """The task: the text of the last user message (a string, or its text parts joined)."""
    return conversation(messages)[0]


def conversation(messages: list[MessageIn]) -> tuple[str, dict[str, Any]]:
    """The task (the last user message's text) and the messages before and after it, as sent
    (`workers.conversation`: every model call of the run carries them)."""
    index = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    if index is None:
        raise OpenAIError(400, "The messages have no user message; the last one is the task.", param="messages")
    content = messages[index].content
    if isinstance(content, list):
        content = "\n".join(part.text for part in content if part.text and part.type in {"text", "input_text"})
    if not content or not content.strip():
        raise OpenAIError(400, "The last user message has no text.", param="messages")
    around = {
        "before": [m.model_dump(exclude_none=True) for m in messages[:index]],
        "after": [m.model_dump(exclude_none=True) for m in messages[index + 1 :]],
    }
    return content, {key: value for key, value in around.items() if value}


def chat_metadata(chat: ChatIn) -> dict[str, Any]:
    """What the run's model calls carry besides the task: the conversation, and the provider
    parameters passed through (tools, tool_choice, a JSON response format)."""
    _, found = conversation(chat.messages)
    if chat.tools:
        found["tools"] = [tool.model_dump(exclude_none=True) for tool in chat.tools]
        if chat.tool_choice is not None:
            choice = chat.tool_choice
            found["tool_choice"] = choice if isinstance(choice, str) else choice.model_dump()
    elif chat.tool_choice is not None:
        raise OpenAIError(400, "tool_choice needs tools.", param="tool_choice")
    if chat.response_format is not None and chat.response_format.type != "text":
        if chat.response_format.type == "json_schema" and chat.response_format.json_schema is None:
            raise OpenAIError(400, "A json_schema response_format needs its json_schema.", param="response_format")
        found["response_format"] = chat.response_format.model_dump(exclude_none=True, by_alias=True)
    return found


def sse(data: dict[str, Any] | str) -> str:
    return f"data: {data if isinstance(data, str) else json.dumps(data, separators=(',', ':'))}\n\n"


async def stream_events(run: Run, reply: Completion, limit_s: float, include_usage: bool) -> AsyncIterator[str]:
    """The run's answer as chat.completion.chunk events once it ends. The role goes first, at
    once; an error after that is sent as an event (the status is already 200)."""
    yield sse(reply.chunk({"role": "assistant", "content": ""}))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    ended = None
    while ended is None:
        left = deadline - loop.time()
        if left <= 0:
            yield sse(error_body(run_timed_out(run.pk, limit_s)))
            return
        try:
            ended = await run_wait(run.pk, min(left, KEEPALIVE_S))
        except OpenAIError as exc:
            yield sse(error_body(exc))
            return
        if ended is None:
            yield f": run {run.pk} is still going\n\n"
    if ended.status != RunStatus.SUCCEEDED:
        yield sse(error_body(run_ended_badly(ended)))
        return
    calls = reply.tool_calls(ended)
    if calls:
        yield sse(reply.chunk({"tool_calls": [{"index": i, **call} for i, call in enumerate(calls)]}))
        yield sse(reply.chunk({}, finish_reason="tool_calls"))
    else:
        answer = ended.final_answer
        for start in range(0, len(answer), CHUNK_CHARS):
            yield sse(reply.chunk({"content": answer[start : start + CHUNK_CHARS]}))
        yield sse(reply.chunk({}, finish_reason="stop"))
    if include_usage:
        yield sse(reply.usage_chunk(ended))
    yield sse("[DONE]")


@openai_view("POST")
async def chat_completions(request: HttpRequest, user: User) -> HttpResponseBase:
    """Run the last user message as a task; answer with the run's final answer."""
    chat = chat_parse(request)
    policy = policy_of(chat.model)
    text = last_user_text(chat.messages)
    run = await sync_to_async(chat_submit)(
        user=user, text=text, policy=policy, pool=chat.pool, decomposable=chat.decomposable, preset=chat.preset,
        cost_preference=chat.cost_preference, best_of=chat.best_of, max_cost_usd=chat.max_cost_usd,
        deadline_s=chat.deadline_s, policy_config=chat.policy_config, chat=chat_metadata(chat),
    )  # fmt: skip
    reply, limit_s = Completion(run, chat.model, tools=bool(chat.tools)), wait_limit_s(chat.deadline_s)
    if chat.stream:
        include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
        events = stream_events(run, reply, limit_s, include_usage)
        response: HttpResponseBase = StreamingHttpResponse(events, content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    else:
        ended = await run_wait(run.pk, limit_s)
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
]
