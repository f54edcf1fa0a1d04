from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from ninja.pagination import LimitOffsetPagination, paginate

from studio.api.auth import current_user, role
from studio.api.body import Body
from studio.models import Attempt, Node, Role, Run, RunStatus
from studio.selectors.runs import run_events, run_get, run_list
from studio.selectors.tree import run_tree
from studio.services.runs import node_rerun, run_cancel, run_create
from studio.streaming import watch_quietly

router = Router(tags=["runs"], auth=role(Role.VIEWER))


class RunOut(Schema):
    id: int
    task_id: int
    task_text: str = Field(alias="task.text")
    owner_id: int
    owner: str = Field(alias="owner.username")
    pool_id: int | None
    policy: str
    checkpoint_id: int | None
    status: str
    end_reason: str
    cost_preference: float | None
    best_of: int
    max_cost_usd: float | None
    max_nodes: int | None
    max_depth: int | None
    deadline_s: int | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float
    final_answer: str
    verification: dict[str, Any]
    last_seq: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class RunIn(Body):
    task_id: int
    pool_id: int
    policy: str | None = Field(
        None, min_length=1, max_length=100, description="default: `learned` once a policy checkpoint is the default"
    )
    policy_config: dict[str, Any] = Field(default_factory=dict)
    cost_preference: float | None = Field(
        None, ge=0, le=100, description="λ: the price of cost in units of the pool's dearest pair; 0 = accuracy only"
    )
    preset: Literal["cheap", "balanced", "best"] | None = Field(None, description="instead of cost_preference")
    best_of: int = Field(1, ge=1, le=16)
    max_cost_usd: Annotated[Decimal, Field(ge=0, max_digits=16, decimal_places=8)] | None = None
    max_nodes: int | None = Field(None, ge=1, le=10_000)
    max_depth: int | None = Field(None, ge=0, le=32)
    deadline_s: int | None = Field(None, ge=1, le=86_400)
    checkpoint_id: int | None = Field(None, description="the learned policy's checkpoint; default: the default one")


class RerunIn(Body):
    endpoint_id: int
    primitive: str = Field(min_length=1, max_length=50)


class AttemptOut(Schema):
    number: int
    model: str = Field(alias="endpoint.model")
    primitive: str = Field(alias="primitive.name")
    status: str
    answer: str | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float
    error_kind: str | None
    error_message: str | None

    @staticmethod
    def resolve_answer(attempt: Attempt) -> str | None:
        return attempt.envelope.get("answer")

    @staticmethod
    def resolve_error_kind(attempt: Attempt) -> str | None:
        return attempt.error_kind or None

    @staticmethod
    def resolve_error_message(attempt: Attempt) -> str | None:
        return attempt.error_message or None


class TotalsOut(Schema):
    tokens_in: float
    tokens_out: float
    cost_usd: float
    latency_s: float


class NodePairOut(Schema):
    """The (model, primitive) pair a node was solved with: its endpoint and primitive."""

    endpoint_id: int
    endpoint: str = Field(description="the endpoint's name in its pool")
    model: str
    primitive: str


class NodeOut(Schema):
    """A node of `studio.selectors.tree.run_tree`."""

    key: str
    kind: str
    parent: str | None
    depends_on: list[str]
    text: str
    status: str
    depth: int
    pair: NodePairOut | None = Field(description="the pair that solved it (its last attempt's); null before one did")
    model: str | None
    endpoint_id: int | None
    primitive: str | None
    answer: str
    output: str
    verification: dict[str, Any]
    item_id: str | None
    best_of: dict[str, Any] | None = Field(
        None, description="best-of-N: the candidates OrchRM scored, their rewards and the chosen index"
    )
    replans: int = Field(0, description="how many times this decomposed node was replanned")
    replan_feedback: str = Field("", description="what went wrong with its last decomposition")
    round: int = Field(
        0, description="the decomposition round of its parent this node belongs to; an earlier one was replanned"
    )
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float
    subtree: TotalsOut
    attempts: list[AttemptOut] = Field(alias="tree_attempts")

    @staticmethod
    def resolve_parent(node: Node) -> str | None:
        return node.parent.key if node.parent else None

    @staticmethod
    def resolve_depends_on(node: Node) -> list[str]:
        return [dependency.key for dependency in node.depends_on.all()]

    @staticmethod
    def resolve_pair(node: Node) -> dict[str, Any] | None:
        if node.endpoint is None or node.primitive is None:
            return None
        return {
            "endpoint_id": node.endpoint_id, "endpoint": node.endpoint.name, "model": node.endpoint.model,
            "primitive": node.primitive.name,
        }  # fmt: skip

    @staticmethod
    def resolve_model(node: Node) -> str | None:
        return node.endpoint.model if node.endpoint else None

    @staticmethod
    def resolve_primitive(node: Node) -> str | None:
        return node.primitive.name if node.primitive else None

    @staticmethod
    def resolve_item_id(node: Node) -> str | None:
        return node.metadata.get("item_id")

    @staticmethod
    def resolve_best_of(node: Node) -> dict[str, Any] | None:
        return node.metadata.get("best_of")

    @staticmethod
    def resolve_replans(node: Node) -> int:
        return int(node.metadata.get("replans", 0))

    @staticmethod
    def resolve_replan_feedback(node: Node) -> str:
        return str(node.metadata.get("replan_feedback", ""))

    @staticmethod
    def resolve_round(node: Node) -> int:
        return int(node.metadata.get("round", 0))


class TreeOut(Schema):
    run: RunOut
    nodes: list[NodeOut]


class RunFilters(Schema):
    status: RunStatus | None = None
    policy: str = ""
    benchmark: str = ""
    owner_id: int | None = None
    task_id: int | None = None
    search: str = Field("", description="text in the task")


class EventOut(Schema):
    seq: int
    type: str
    payload: dict[str, Any]
    created_at: datetime


class EventPageOut(Schema):
    items: list[EventOut]
    next_after: int | None = Field(description="pass as ?after= for the next page; null at the end")


@router.post("", response={201: RunOut})
def create_run(request: HttpRequest, payload: RunIn) -> Status:
    """Start a run of a task on a pool under a policy, with an optional budget. Its calls stream
    their tokens to `/ws/runs/{id}/` for the first minute, for the live view that opens next."""
    run = run_create(owner=current_user(request), **payload.dict())
    watch_quietly(run.pk)
    return Status(201, run)


@router.post("/{run_id}/cancel", response=RunOut)
def cancel_run(request: HttpRequest, run_id: int) -> Run:
    """Stop a run: queued attempts are cancelled; attempts already running finish and are billed."""
    return run_cancel(user=current_user(request), run_id=run_id)


@router.post("/{run_id}/nodes/{node_key}/rerun", response={202: dict[str, int]})
def rerun_node(request: HttpRequest, run_id: int, node_key: str, payload: RerunIn) -> Status:
    """Run one node again with another admissible pair."""
    attempt = node_rerun(
        user=current_user(request), run_id=run_id, node_key=node_key,
        endpoint_id=payload.endpoint_id, primitive=payload.primitive,
    )  # fmt: skip
    watch_quietly(run_id)
    return Status(202, {"attempt": attempt.number})


@router.get("/{run_id}/tree", response=TreeOut)
def get_run_tree(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """The run's nodes, attempts, and totals per node and per subtree."""
    return run_tree(user=current_user(request), run_id=run_id)


@router.get("", response=list[RunOut])
@paginate(LimitOffsetPagination)
def list_runs(request: HttpRequest, filters: Query[RunFilters]) -> QuerySet[Run]:
    """Your runs, or everyone's for researchers and admins; newest first."""
    fields = filters.dict()
    fields["status"] = filters.status.value if filters.status else ""
    return run_list(user=current_user(request), **fields)


@router.get("/{run_id}", response=RunOut)
def get_run(request: HttpRequest, run_id: int) -> Run:
    return run_get(user=current_user(request), run_id=run_id)


@router.get("/{run_id}/events", response=EventPageOut)
def list_run_events(
    request: HttpRequest,
    run_id: int,
    after: int = Query(0, ge=0, description="return events with a greater sequence number"),
    limit: int = Query(500, ge=1, le=1000),
) -> dict[str, Any]:
    """A run's events in sequence order, paged by sequence number."""
    events = run_events(user=current_user(request), run_id=run_id, after=after, limit=limit)
    next_after = events[-1].seq if len(events) == limit else None
    return {"items": events, "next_after": next_after}
