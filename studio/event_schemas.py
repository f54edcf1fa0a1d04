"""What the WebSockets send, as schemas: each run event's payload (`/ws/runs/<id>/`, and
`GET /api/runs/{id}/events`), and the progress of a training job or an evaluation.

The browser's types are generated from these, as the API's are from its OpenAPI schema:
`make api-types` writes `frontend/src/api/messages.json` (`event_schema()`) and
`messages.d.ts` from it; tests/studio/test_event_types.py keeps the copy equal to this
module. Where `ORCHESTRA_CHECK_EVENTS` is on (the tests), every run event is checked
against its payload's schema as it is appended (`check_events`), so a payload that
drifts from its schema fails the test that wrote it.

A field with a default may be missing from a payload: not every writer of an event sends it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.json_schema import models_json_schema


class Payload(BaseModel):
    """A run event's payload: exactly these keys."""

    model_config = ConfigDict(extra="forbid")


class RunCreated(Payload):
    task: int = Field(description="the task's id")
    policy: str


class RunStarted(Payload):
    policy: str
    pool: int | None = Field(description="the pool's id")


class RunFinished(Payload):
    status: str = Field(description="succeeded, failed or cancelled")
    reason: str
    answer: str | None = Field(None, description="the final answer (its first 2000 characters)")
    verification: dict[str, Any] | None = None
    cancelled_attempts: int = Field(0, description="queued attempts cancelled as the run ended")
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None


class RunVerified(Payload):
    """The run's verification, when it comes after the run finished."""

    verification: dict[str, Any]


class NodeCreated(Payload):
    key: str
    kind: str = Field(description="root, subtask or aggregate")
    text: str = Field(description="the node's text (its first 2000 characters)")
    depth: int
    parent: str | None = Field(description="the parent's key")
    depends_on: list[str] = Field(description="keys of the siblings it waits for")
    status: str
    item_id: str | None = Field(description="the recorded item it is, if any")
    round: int = Field(0, description="its parent's decomposition round (after a replan; 0 is the first)")


class NodeStatusChanged(Payload):
    """`node.<status>`: a node's new status, with what brought it there."""

    key: str
    answer: str | None = Field(None, description="succeeded or answered: the answer (its first 2000 characters)")
    attempt: int | None = Field(None, description="succeeded or answered: the number of the attempt that answered")
    accepted: bool | None = Field(None, description="succeeded: the policy accepted this answer among the node's")
    aggregated: int | None = Field(None, description="succeeded aggregate: how many answers it composed")
    reason: str | None = Field(None, description="failed, skipped or cancelled: why")
    planned: int | None = Field(None, description="ready after planning: the subtasks planned")
    plan_failed: str | None = Field(None, description="ready after a failed planning attempt: its error")
    after_failure: str | None = Field(None, description="ready or answered again after a failed attempt: its error")
    attempts: int | None = Field(None, description="ready or answered again after a failed attempt: attempts so far")


class Subtask(Payload):
    id: str
    text: str
    depends_on: list[str]
    primitive: str | None


class NodeDecomposed(Payload):
    key: str
    subtasks: list[Subtask]


class NodeReplanned(Payload):
    """A decomposed node's round closed (its unfinished parts cancelled): it is planned anew."""

    key: str
    feedback: str = Field(description="what went wrong with its parts, for the next plan")
    replans: int = Field(description="how many times the node was replanned")


class BestOfCandidate(Payload):
    endpoint_id: int
    model: str
    primitive: str
    reward: float


class BestOfPlanCandidate(Payload):
    """A whole plan of a composite task, scored node by node (docs/api.md, Best-of-N)."""

    plan: dict[str, Any] = Field(
        description='{"solve": [endpoint, primitive]} solved whole, or {"split": [plan, ...]}, a recorded '
        'part\'s being {"pair": [endpoint, primitive]}'
    )
    right: float = Field(description="OrchRM's probability of a right answer, averaged over the parts")
    lam_cost: float = Field(description="the note's cost_weight times the estimated cost, averaged over the parts")
    score: float = Field(description="right - lam_cost: the candidate of highest score is executed")
    decomposed: bool


class BestOfNote(Payload):
    """What a best-of-N choice scored (docs/api.md, Best-of-N)."""

    n: int
    lam: float
    cost_weight: float | None = Field(
        None, description="what a composite plan's estimated cost is weighed by: λ, or the run's best_of_cost"
    )
    sampler: str
    candidates: list[BestOfCandidate] | list[BestOfPlanCandidate]
    chosen: int = Field(description="the index of the candidate executed")
    executed: int
    scoring_tokens: int


class NodeNoted(Payload):
    """What the policy recorded with its choice; a policy may note other keys too."""

    model_config = ConfigDict(extra="allow")

    key: str
    best_of: BestOfNote | None = None


class AttemptQueued(Payload):
    key: str = Field(description="the node's key")
    attempt: int = Field(description="the attempt's id")
    number: int = Field(description="the attempt's number on its node, from 1")
    endpoint: int = Field(description="the endpoint's id")
    primitive: str
    repair: bool = Field(False, description="a repair of a failed attempt")
    rerun_by: str | None = Field(None, description="the user who re-ran the node")


class AttemptFinished(Payload):
    attempt: int = Field(description="the attempt's id")
    node: str = Field(description="the node's key")
    status: str
    answer: str | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float
    error_kind: str | None
    error_message: str | None


class ProtocolViolation(Payload):
    action: str
    reason: str
    count: int = Field(description="the run's violations so far")


class EventMessage(BaseModel):
    """One message of /ws/runs/<id>/ (and one item of GET /api/runs/{id}/events, without `kind`)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["event"]
    seq: int = Field(description="the event's number in its run, from 1")
    created_at: str = Field(description="ISO 8601")


class RunCreatedEvent(EventMessage):
    type: Literal["run.created"]
    payload: RunCreated


class RunStartedEvent(EventMessage):
    type: Literal["run.started"]
    payload: RunStarted


class RunFinishedEvent(EventMessage):
    type: Literal["run.finished"]
    payload: RunFinished


class RunVerifiedEvent(EventMessage):
    type: Literal["run.verified"]
    payload: RunVerified


class NodeCreatedEvent(EventMessage):
    type: Literal["node.created"]
    payload: NodeCreated


class NodeStatusChangedEvent(EventMessage):
    type: Literal[
        "node.pending",
        "node.ready",
        "node.running",
        "node.answered",
        "node.succeeded",
        "node.failed",
        "node.skipped",
        "node.cancelled",
    ]
    payload: NodeStatusChanged


class NodeDecomposedEvent(EventMessage):
    type: Literal["node.decomposed"]
    payload: NodeDecomposed


class NodeReplannedEvent(EventMessage):
    type: Literal["node.replanned"]
    payload: NodeReplanned


class NodeNotedEvent(EventMessage):
    type: Literal["node.noted"]
    payload: NodeNoted


class AttemptQueuedEvent(EventMessage):
    type: Literal["attempt.queued"]
    payload: AttemptQueued


class AttemptFinishedEvent(EventMessage):
    type: Literal["attempt.finished"]
    payload: AttemptFinished


class ProtocolViolationEvent(EventMessage):
    type: Literal["protocol.violation"]
    payload: ProtocolViolation


MESSAGES: list[type[EventMessage]] = [
    RunCreatedEvent, RunStartedEvent, RunFinishedEvent, RunVerifiedEvent, NodeCreatedEvent, NodeStatusChangedEvent,
    NodeDecomposedEvent, NodeReplannedEvent, NodeNotedEvent, AttemptQueuedEvent, AttemptFinishedEvent,
    ProtocolViolationEvent,
]  # fmt: skip

# One message of /ws/runs/<id>/: which one, its `type` says.
RunEventMessage = Annotated[
    RunCreatedEvent | RunStartedEvent | RunFinishedEvent | RunVerifiedEvent | NodeCreatedEvent
    | NodeStatusChangedEvent | NodeDecomposedEvent | NodeReplannedEvent | NodeNotedEvent | AttemptQueuedEvent
    | AttemptFinishedEvent | ProtocolViolationEvent,
    Field(discriminator="type"),
]  # fmt: skip


def _payloads() -> dict[str, type[Payload]]:
    """Each event type and its payload's schema, from the messages."""
    payloads: dict[str, type[Payload]] = {}
    for message in MESSAGES:
        payload = message.model_fields["payload"].annotation
        assert isinstance(payload, type) and issubclass(payload, Payload)
        for event_type in get_args(message.model_fields["type"].annotation):
            payloads[event_type] = payload
    return payloads


PAYLOADS = _payloads()


class TrainingProgress(BaseModel):
    """A message of /ws/training/<id>/: the job as it stands (first), then each update."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["progress"]
    id: int
    status: str = Field(description="queued, running, succeeded or failed")
    progress: float = Field(description="0 to 1")
    metrics: dict[str, Any] = Field(description="the latest value of each metric")
    message: str = Field(description="the stage, or why it failed")


class EvaluationProgress(BaseModel):
    """A message of /ws/evaluations/<id>/: the evaluation as it stands (first), then each update."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["progress"]
    id: int
    status: str = Field(description="queued, running, succeeded or failed")
    progress: float = Field(description="0 to 1, a step per method")
    message: str = Field(description="the method being fitted, or why it failed")


class RunDelta(BaseModel):
    """A message of /ws/runs/<id>/ that is not an event: the next piece of a call's text as the
    model writes it (studio/streaming.py), sent while someone watches the run. Nothing stores
    it; the node's events carry its output."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["delta"]
    node: str = Field(description="the node's key")
    attempt: int = Field(description="the attempt's number on the node")
    primitive: str
    offset: int = Field(description="characters of the attempt's text before this piece")
    text: str


class EventSchemaError(ValueError):
    """A run event whose type is unknown or whose payload breaks its schema."""


def check_events(events: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Each (type, payload) is a known event type with a payload its schema accepts."""
    for event_type, payload in events:
        schema = PAYLOADS.get(event_type)
        if schema is None:
            raise EventSchemaError(f"Unknown run event type {event_type!r}; known: {', '.join(sorted(PAYLOADS))}.")
        try:
            schema.model_validate(payload, strict=True)
        except ValidationError as exc:
            raise EventSchemaError(f"The payload of a {event_type} event breaks its schema: {exc}") from None


REF = "#/components/schemas/{model}"


def _without_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """A field with a default may be missing from a message; openapi-typescript would type a
    property with a default as always there, so the copy keeps no defaults."""
    properties = {
        name: {key: value for key, value in field.items() if key != "default"}
        for name, field in schema.get("properties", {}).items()
    }
    return {**schema, "properties": properties} if properties else schema


def event_schema() -> dict[str, Any]:
    """The messages as an OpenAPI document (components only), for openapi-typescript."""
    models: list[type[BaseModel]] = [*MESSAGES, RunDelta, TrainingProgress, EvaluationProgress]
    _, top = models_json_schema([(model, "validation") for model in models], ref_template=REF)
    schemas = {name: _without_defaults(schema) for name, schema in top["$defs"].items()}
    union = TypeAdapter(RunEventMessage).json_schema(ref_template=REF)
    union.pop("$defs", None)
    schemas["RunEventMessage"] = union
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Orchestra Studio WebSocket messages",
            "version": "1",
            "description": "Generated from studio/event_schemas.py by `make api-types`; do not edit.",
        },
        "paths": {},
        "components": {"schemas": dict(sorted(schemas.items()))},
    }
