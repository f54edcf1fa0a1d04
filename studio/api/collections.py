"""Collections: a pool's pairs run on chosen tasks within a budget, kept as recorded outcomes
(docs/collect.md). Researchers and admins start, follow, cancel and resume them."""

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from ninja.pagination import LimitOffsetPagination, paginate
from pydantic import StrictBool, StrictFloat, StrictInt, StrictStr

from studio.api.auth import current_user, role
from studio.api.body import Body
from studio.api.jobs import JobOut
from studio.models import Collection, Role
from studio.selectors.collections import collection_get, collection_list
from studio.services.collections import MAX_CONCURRENCY, collection_cancel, collection_create, collection_resume

router = Router(tags=["collections"], auth=role(Role.RESEARCHER))


class CollectionPairIn(Body):
    endpoint_id: StrictInt
    primitive: StrictStr = Field(min_length=1, max_length=50)


class CollectionIn(Body):
    pool_id: StrictInt
    task_ids: list[StrictInt] = Field(min_length=1, max_length=100_000)
    pairs: list[CollectionPairIn] = Field(min_length=1, max_length=1000)
    budget_usd: StrictFloat | StrictInt = Field(gt=0, description="dollars it may spend, within one call per endpoint")
    max_concurrency: StrictInt = Field(4, ge=1, le=MAX_CONCURRENCY, description="calls in flight per endpoint")
    name: StrictStr = Field("", max_length=100)
    calibrates: StrictBool = Field(False, description="once it succeeds, its outcomes become the pool's calibration")


class ResumeIn(Body):
    budget_usd: StrictFloat | StrictInt | None = Field(None, gt=0, description="a larger budget, if it stopped on one")


class CellsOut(Schema):
    total: int = Field(alias="cells_total")
    pending: int = Field(alias="cells_pending")
    started: int = Field(alias="cells_started")
    recorded: int = Field(alias="cells_recorded")
    failed: int = Field(alias="cells_failed")


class CollectionOut(JobOut):
    name: str
    source: str
    pool_id: int
    pool_name: str = Field(alias="pool.name")
    budget_usd: float
    spent_usd: float
    max_concurrency: int
    calibrates: bool
    cells: CellsOut

    @staticmethod
    def resolve_cells(obj: Collection) -> Collection:
        return obj


@router.post("/collections", response={201: CollectionOut})
def create_collection(request: HttpRequest, payload: CollectionIn) -> Status:
    """Queue a collection of every task × pair on queue `training`; its outcomes' source is `collection-<id>`."""
    collection = collection_create(
        owner=current_user(request), pool_id=payload.pool_id, task_ids=payload.task_ids,
        pairs=[(p.endpoint_id, p.primitive) for p in payload.pairs], budget_usd=float(payload.budget_usd),
        max_concurrency=payload.max_concurrency, name=payload.name, calibrates=payload.calibrates,
    )  # fmt: skip
    return Status(201, collection_get(collection_id=collection.pk))


@router.get("/collections", response=list[CollectionOut])
@paginate(LimitOffsetPagination)
def list_collections(request: HttpRequest) -> QuerySet[Collection]:
    """Collections, newest first, each with its cells counted by status."""
    return collection_list()


@router.get("/collections/{collection_id}", response=CollectionOut)
def get_collection(request: HttpRequest, collection_id: int) -> Collection:
    return collection_get(collection_id=collection_id)


@router.post("/collections/{collection_id}/cancel", response=CollectionOut)
def cancel_collection(request: HttpRequest, collection_id: int) -> Collection:
    """Stop sending calls; the cells recorded stay. A collection that has ended is left as it is."""
    collection_cancel(collection_id=collection_id)
    return collection_get(collection_id=collection_id)


@router.post("/collections/{collection_id}/resume", response=CollectionOut)
def resume_collection(request: HttpRequest, collection_id: int, payload: ResumeIn) -> Collection:
    """Queue it again: only the cells not yet recorded are called (409 while it is queued or running)."""
    budget = float(payload.budget_usd) if payload.budget_usd is not None else None
    collection_resume(collection_id=collection_id, budget_usd=budget)
    return collection_get(collection_id=collection_id)
