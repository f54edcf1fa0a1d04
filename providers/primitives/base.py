"""What every primitive shares: its input, the registry, and the envelope it returns; and
`run_attempt`, one attempt as the studio stores its request (`Attempt.request`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from orchestrator.core.envelope import Envelope
from orchestrator.core.items import composite_answer
from providers.conversation import Conversation
from providers.llm import EndpointConfig, LLMClient, ProviderError, TokenSink, token_sink

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PrimitiveInput:
    """The (sub)task a primitive works on."""

    prompt: str
    item_id: str | None = None  # the recorded item, so replay can match it by id
    items: tuple[str, ...] = ()  # a composite node solved whole: its recorded items, each answered by replay
    feedback: str = ""  # plan: what went wrong with the last plan of this task (a replan)
    benchmark: str = ""
    context: str = ""  # long_context: the document to read
    tests: str = ""  # reflexion: unit tests the code must pass
    entry_point: str = ""  # reflexion: the function the tests call
    candidate: str = ""  # verify: the answer under review
    tools: list[dict[str, Any]] = field(default_factory=list)  # tool_use: extra OpenAI function schemas
    chat: dict[str, Any] = field(default_factory=dict)  # a /v1 chat's conversation (providers.conversation)


Params = dict[str, Any]
Body = Callable[[LLMClient, PrimitiveInput, Params], Envelope]
Extract = Callable[[str], str | None]

REGISTRY: dict[str, Body] = {}
EXTRACTORS: dict[str, Extract] = {}


def primitive(name: str, *, extract: Extract) -> Callable[[Body], Body]:
    """Register a primitive's body, and how to read the answer out of its output
    (replay uses the same rule on a recorded output)."""

    def register(body: Body) -> Body:
        REGISTRY[name] = body
        EXTRACTORS[name] = extract
        return body

    return register


def replayed(llm: LLMClient, name: str, task: PrimitiveInput) -> Envelope:
    """A recorded primitive run: the recording is the primitive's whole output."""
    messages = [{"role": "user", "content": task.prompt}]
    completion = llm.complete(messages, primitive=name, item_id=task.item_id, item_ids=tuple(task.items))
    recording = completion.recording or {}
    output = completion.text
    artifacts = {
        "replay": True,
        "recorded_score": recording.get("score"),
        "response_recorded": recording.get("response_recorded", bool(output)),
        "tokens_recorded": recording.get("tokens_recorded", [True, True]),
        "source": recording.get("source"),
        "item_id": recording.get("item_id"),
    }
    answer = EXTRACTORS[name](output) if output else None
    parts = recording.get("parts")
    if parts:  # a composite node solved whole: each part's answer, as the primitive reads it
        answer = composite_answer([EXTRACTORS[name](p["response"] or "") or "" for p in parts])
        artifacts |= {"part_scores": [p["score"] for p in parts], "items": [p["item_id"] for p in parts]}
    return Envelope(status="ok", output=output, answer=answer, artifacts=artifacts)


def run_primitive(name: str, llm: LLMClient, task: PrimitiveInput, params: Params | None = None) -> Envelope:
    """Run a primitive; never raises. Usage and cost are summed over all its calls."""
    body = REGISTRY.get(name)
    if body is None:
        known = ", ".join(sorted(REGISTRY))
        return Envelope.failure("bad_request", f"Unknown primitive {name!r}; known: {known}.")
    llm.conversation = Conversation.of(task.chat)
    try:
        envelope = replayed(llm, name, task) if llm.is_replay else body(llm, task, params or {})
    except ProviderError as error:
        envelope = Envelope.failure(error.kind, error.message, status="timeout" if error.kind == "timeout" else "error")
    except Exception as exc:  # a bug in a primitive must not take the worker down
        log.exception("primitive %s failed", name)
        envelope = Envelope.failure("unknown", f"{type(exc).__name__}: {exc}"[:500])
    meter = llm.meter
    envelope.tokens_in, envelope.tokens_out = meter.tokens_in, meter.tokens_out
    envelope.cost_usd, envelope.latency_s = meter.cost_usd, meter.latency_s
    envelope.artifacts.setdefault("calls", meter.calls)
    envelope.artifacts.setdefault("retries", meter.retries)
    return envelope


# The request's keys that are the primitive's input.
INPUT_FIELDS = (
    "prompt", "item_id", "items", "benchmark", "context", "tests", "entry_point", "candidate", "tools", "feedback",
    "chat",
)  # fmt: skip


class ClosingSink(TokenSink, Protocol):
    def close(self) -> None:
        """The attempt is over: no more text will come."""


def run_attempt(
    primitive: str,
    config: EndpointConfig,
    request: Mapping[str, Any],
    params: Params,
    tokens: ClosingSink | None = None,
) -> Envelope:
    """The attempt's envelope; a failure is an envelope, never an exception (`run_primitive`),
    save an exception raised into the caller's thread from outside (a time limit)."""
    fields = {key: request[key] for key in INPUT_FIELDS if key in request}
    if "items" in fields:
        fields["items"] = tuple(str(item) for item in fields["items"])
    task = PrimitiveInput(**fields)
    if tokens is None:
        return run_primitive(primitive, LLMClient(config), task, params)
    streaming = token_sink.set(tokens)
    try:
        return run_primitive(primitive, LLMClient(config), task, params)
    finally:
        token_sink.reset(streaming)
        tokens.close()
