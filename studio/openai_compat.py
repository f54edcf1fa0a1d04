"""An OpenAI-compatible endpoint at /v1/: a chat completion becomes a task and a run.

- `POST /v1/chat/completions`, model `orchestra` (the default policy) or `orchestra/<policy>`:
  the last user message becomes a task, a run of it starts on a pool, and the response
  is the run's final answer once it ends (or, with `stream: true`, server-sent events).
- `GET /v1/models` and `GET /v1/models/<id>`: the models above, one per policy.

Authentication is the API bearer token only (no session, no CSRF). Errors have OpenAI's
shape, `{"error": {"message", "type", "param", "code"}}`. The views are async: a waiting
request holds no server thread, it polls the run's row every POLL_S seconds, and no database
connection between polls. A database that cannot be reached is a 503 (code
`database_unavailable`), with the run's id once the run exists.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from decimal import Decimal
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import transaction
from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.policies import policy_names
from studio.db import connection_release
from studio.errors import ApplicationError
from studio.models import RUN_ENDED, ModelPool, Run, RunStatus, User
from studio.services.runs import PRESETS, run_create
from studio.services.tasks import task_create
from studio.services.tokens import token_user
from studio.storable import UnstorableText, check_storable
from studio.unavailable import DATABASE_ERRORS, MESSAGE, RETRY_AFTER_S, log_unavailable

MODEL = "orchestra"
RUN_HEADER = "x-orchestra-run-id"
POLL_S = 0.05
# A run given deadline_s ends itself just after it; wait a little longer to report how it ended.
DEADLINE_GRACE_S = 5
# An SSE comment this often while a streamed run works, so that proxies keep the connection.
KEEPALIVE_S = 15.0
CHUNK_CHARS = 64
STARTED = int(time.time())


def default_pool_name() -> str:
    return settings.ORCHESTRA_DEFAULT_POOL


def wait_limit_s(deadline_s: int | None) -> float:
    if deadline_s is not None:
        return deadline_s + DEADLINE_GRACE_S
    return float(settings.ORCHESTRA_OPENAI_WAIT_S)


# Errors


class OpenAIError(ApplicationError):
    """An error in OpenAI's shape; `run_id` is also sent as the x-orchestra-run-id header."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        run_id: int | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message, extra)
        self.status, self.type, self.param, self.code, self.run_id = status, type, param, code, run_id


def error_body(exc: ApplicationError) -> dict[str, Any]:
    if isinstance(exc, OpenAIError):
        error: dict[str, Any] = {"message": exc.message, "type": exc.type, "param": exc.param, "code": exc.code}
        if exc.run_id is not None:
            error["run_id"] = exc.run_id
        return {"error": {**error, **exc.extra}}
    # A service's error: its field is the parameter at fault.
    kind = "permission_error" if exc.status == 403 else "invalid_request_error"
    return {"error": {"message": exc.message, "type": kind, "param": exc.extra.get("field"), "code": None}}


def error_response(exc: ApplicationError) -> JsonResponse:
    response = JsonResponse(error_body(exc), status=exc.status)
    if exc.status == 503:
        response["Retry-After"] = str(RETRY_AFTER_S)
    if isinstance(exc, OpenAIError) and exc.run_id is not None:
        response[RUN_HEADER] = str(exc.run_id)
        # OpenAI's clients retry a 5xx unless told not to; a retry would start another run.
        response["x-should-retry"] = "false"
    return response


def run_ended_badly(run: Run) -> OpenAIError:
    reason = run.end_reason or "no reason was recorded"
    return OpenAIError(
        502, f"Run {run.pk} {run.status}: {reason}", type="orchestra_run_failed", code=f"run_{run.status}",
        run_id=run.pk, run_status=run.status, end_reason=run.end_reason,
    )  # fmt: skip


def database_unavailable(exc: BaseException, run_id: int | None = None) -> OpenAIError:
    log_unavailable("/v1", exc)
    return OpenAIError(503, MESSAGE, type="service_unavailable", code="database_unavailable", run_id=run_id)


def run_timed_out(run_id: int, limit_s: float) -> OpenAIError:
    return OpenAIError(
        504,
        f"Run {run_id} has not ended after {limit_s:g} s. It goes on: follow it at /api/runs/{run_id}.",
        type="orchestra_run_timeout", code="run_timeout", run_id=run_id,
    )  # fmt: skip


# Views


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


def model_card(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": STARTED, "owned_by": "orchestra"}


def model_ids() -> list[str]:
    return [MODEL, *(f"{MODEL}/{name}" for name in policy_names())]


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
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[ContentPart] | None = None


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


def policy_of(model: str) -> str | None:
    """The policy that model `orchestra[/<policy>]` names; None (the studio's default) for `orchestra`."""
    name = model.strip()
    if name == MODEL:
        return None
    prefix, slash, policy = name.partition("/")
    if not name or (prefix == MODEL and slash and not policy):
        raise OpenAIError(400, "Name a model: orchestra or orchestra/<policy>.", param="model")
    if prefix != MODEL or policy not in policy_names():
        raise OpenAIError(
            404,
            f"The model {model[:100]!r} does not exist; use one of {', '.join(model_ids())}.",
            param="model", code="model_not_found",
        )  # fmt: skip
    return policy


def last_user_text(messages: list[MessageIn]) -> str:
    """The task: the text of the last user message (a string, or its text parts joined)."""
    user = next((message for message in reversed(messages) if message.role == "user"), None)
    if user is None:
        raise OpenAIError(400, "The messages have no user message; the last one is the task.", param="messages")
    content = user.content
    if isinstance(content, list):
        content = "\n".join(part.text for part in content if part.text and part.type in {"text", "input_text"})
    if not content or not content.strip():
        raise OpenAIError(400, "The last user message has no text.", param="messages")
    return content


def pool_resolve(ref: int | str | None) -> int:
    """The pool named by id or name; by default ORCHESTRA_DEFAULT_POOL, or else the first
    pool that has an admissible pair."""
    pools = ModelPool.objects.all()
    if ref is None:
        usable = pools.filter(endpoints__enabled=True, endpoints__admissibilities__allowed=True).distinct()
        pool = usable.filter(name=default_pool_name()).first() or usable.order_by("id").first()
        if pool is None:
            raise OpenAIError(
                422, "No model pool has an admissible (model, primitive) pair yet; an admin sets one up.",
                param="pool",
            )  # fmt: skip
        return pool.pk
    pool = pools.filter(pk=ref).first() if isinstance(ref, int) else pools.filter(name=ref).first()
    if pool is None and isinstance(ref, str) and ref.isdigit():
        pool = pools.filter(pk=int(ref)).first()
    if pool is None:
        raise OpenAIError(400, f"There is no model pool {str(ref)[:100]!r}.", param="pool", code="pool_not_found")
    return pool.pk


@transaction.atomic
def chat_submit(*, user: User, chat: ChatIn, policy: str | None, text: str) -> Run:
    """A task of `text` and a run of it, both or neither; the run starts once this commits."""
    pool_id = pool_resolve(chat.pool)
    task = task_create(owner=user, text=text, decomposable=chat.decomposable, metadata={"via": "openai"})
    cost_preference = PRESETS[chat.preset] if chat.preset is not None else chat.cost_preference
    return run_create(
        owner=user, task_id=task.pk, pool_id=pool_id, policy=policy, policy_config=chat.policy_config,
        cost_preference=cost_preference, best_of=chat.best_of, max_cost_usd=chat.max_cost_usd,
        deadline_s=chat.deadline_s,
    )  # fmt: skip


def run_if_ended(run_id: int) -> Run | None:
    """The run if it has ended. The connection goes back at once (to the process's pool): a
    run may take minutes, and every waiting request would otherwise hold one all along."""
    try:
        return Run.objects.filter(pk=run_id, status__in=RUN_ENDED).first()
    finally:
        connection_release()


async def run_wait(run_id: int, limit_s: float) -> Run | None:
    """The run once it has ended, or None if it is still going after `limit_s`. A database
    that cannot be reached is an OpenAIError (503) naming the run."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while True:
        try:
            run = await sync_to_async(run_if_ended)(run_id)
        except DATABASE_ERRORS as exc:
            raise database_unavailable(exc, run_id) from None
        if run is not None or loop.time() >= deadline:
            return run
        await asyncio.sleep(min(POLL_S, max(deadline - loop.time(), 0)))


class Completion:
    """The chat.completion and chat.completion.chunk bodies for one run."""

    def __init__(self, run: Run, model: str) -> None:
        self.id = f"chatcmpl-run-{run.pk}"
        self.created = int(run.created_at.timestamp())
        self.model = model

    def completion(self, run: Run) -> dict[str, Any]:
        message = {"role": "assistant", "content": run.final_answer}
        return {
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
            "usage": usage(run),
            "orchestra": {
                "run_id": run.pk, "task_id": run.task_id, "pool_id": run.pool_id, "policy": run.policy,
                "cost_usd": float(run.cost_usd), "latency_s": run.latency_s,
            },
        }  # fmt: skip

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return {
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [choice],
        }  # fmt: skip

    def usage_chunk(self, run: Run) -> dict[str, Any]:
        return {**self.chunk({}), "choices": [], "usage": usage(run)}


def usage(run: Run) -> dict[str, int]:
    return {
        "prompt_tokens": run.tokens_in,
        "completion_tokens": run.tokens_out,
        "total_tokens": run.tokens_in + run.tokens_out,
    }


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
    run = await sync_to_async(chat_submit)(user=user, chat=chat, policy=policy, text=text)
    reply, limit_s = Completion(run, chat.model), wait_limit_s(chat.deadline_s)
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
