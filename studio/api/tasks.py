from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from ninja.pagination import LimitOffsetPagination, paginate

from studio.api.auth import current_user, role
from studio.api.body import Body
from studio.models import Domain, Role, Task
from studio.selectors.runs import task_get, task_list
from studio.services.tasks import task_create, task_create_composite

router = Router(tags=["tasks"], auth=role(Role.VIEWER))


class TaskIn(Body):
    text: str = Field(description="the task; its size limit is ORCHESTRA_MAX_TASK_CHARS")
    gold_answer: str = Field("", max_length=100_000)
    checker: str = Field("", max_length=50, description="how an answer is verified, e.g. numeric")
    benchmark: str = Field("", max_length=100)
    domain: Domain | None = None
    decomposable: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


class TaskOut(Schema):
    id: int
    owner_id: int
    owner: str = Field(alias="owner.username")
    text: str
    gold_answer: str
    checker: str
    benchmark: str
    domain: str
    decomposable: bool
    metadata: dict[str, Any]
    created_at: datetime


@router.post("", response={201: TaskOut})
def create_task(request: HttpRequest, payload: TaskIn) -> Status:
    fields = payload.dict()
    fields["domain"] = payload.domain.value if payload.domain else ""
    return Status(201, task_create(owner=current_user(request), **fields))


class ItemRef(Body):
    source: str = Field(min_length=1, max_length=50)
    item_id: str = Field(min_length=1, max_length=200)


class CompositeIn(Body):
    items: list[ItemRef] = Field(min_length=1, max_length=32)
    text: str = Field("", description="optional; by default the items' prompts, numbered")


@router.post("/composite", response={201: TaskOut})
def create_composite_task(request: HttpRequest, payload: CompositeIn) -> Status:
    """A task made of recorded items, decomposed into one subtask per item and answered by replay."""
    items = [(item.source, item.item_id) for item in payload.items]
    return Status(201, task_create_composite(owner=current_user(request), items=items, text=payload.text))


@router.get("", response=list[TaskOut])
@paginate(LimitOffsetPagination)
def list_tasks(
    request: HttpRequest,
    search: str = "",
    benchmark: str = "",
    domain: str = "",
    owner_id: int | None = None,
) -> QuerySet[Task]:
    """Your tasks, or everyone's for researchers and admins; newest first."""
    return task_list(user=current_user(request), search=search, benchmark=benchmark, domain=domain, owner_id=owner_id)


@router.get("/{task_id}", response=TaskOut)
def get_task(request: HttpRequest, task_id: int) -> Task:
    return task_get(user=current_user(request), task_id=task_id)
