from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.pagination import LimitOffsetPagination, paginate

from studio.api.auth import current_user, role
from studio.models import Role, Run, RunStatus
from studio.selectors.runs import run_events, run_get, run_list

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
