from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from ninja.errors import HttpError
from ninja.pagination import LimitOffsetPagination, paginate

from orchestrator.benchmark_tasks import BENCHMARKS
from studio.api.auth import current_user, role
from studio.api.body import Body
from studio.errors import Invalid
from studio.models import Domain, Role, Task
from studio.selectors.runs import task_get, task_list
from studio.services.tasks import task_create, task_create_composite, tasks_from_benchmark, tasks_import

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


class FromBenchmarkIn(Body):
    benchmark: str = Field(max_length=50, description=f"one of {', '.join(BENCHMARKS)}")
    n: int = Field(ge=1, description="how many items, at most the benchmark's")
    seed: int = Field(0, description="the sample's seed")


class TasksMadeOut(Schema):
    task_ids: list[int] = Field(description="every task of the sample (or file), in its order")
    created: int = Field(description="of them, made now")
    existing: int = Field(description="of them, yours already (the same benchmark item), not made again")


@router.post("/from-benchmark", response={201: TasksMadeOut})
def create_benchmark_tasks(request: HttpRequest, payload: FromBenchmarkIn) -> Status:
    """Checker-verified tasks of a seeded sample of a vendored benchmark's items."""
    made = tasks_from_benchmark(
        owner=current_user(request), benchmark=payload.benchmark, n=payload.n, seed=payload.seed
    )
    return Status(201, made)


JSONL_TYPES = {"application/x-ndjson", "application/jsonl", "application/jsonlines", "text/plain"}


@router.post(
    "/import",
    response={201: TasksMadeOut},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {media: {"schema": {"type": "string"}} for media in ("application/x-ndjson", "text/plain")},
        }
    },
)
def import_tasks(request: HttpRequest) -> Status:
    """A JSONL body, one {prompt, gold, checker, domain} task a line; all of it or, with any bad
    line, none (422 listing them)."""
    media = request.content_type or ""
    if media not in JSONL_TYPES:
        raise HttpError(415, f"Send the JSONL as application/x-ndjson or text/plain, not {media or 'no type'}.")
    try:
        text = request.body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Invalid("body", "The request body is not UTF-8 text.") from None
    return Status(201, tasks_import(owner=current_user(request), text=text))


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
