"""What the submit form offers: policies, presets, checkers and the recorded items that
make composite tasks on the replay pool."""

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.pagination import LimitOffsetPagination, paginate

from orchestrator.embedding import question_of
from studio.api.auth import current_user, role
from studio.models import Role
from studio.selectors.catalog import recorded_item_list, run_options

router = Router(tags=["catalog"], auth=role(Role.VIEWER))

PROMPT_PREVIEW = 400


class PolicyOut(Schema):
    name: str
    needs_checkpoint: bool = Field(description="runs of it load a trained checkpoint")


class OptionsOut(Schema):
    policies: list[PolicyOut]
    default_policy: str = Field(description="what a run that names no policy gets")
    presets: dict[str, float] = Field(description="named cost preferences λ")
    checkers: list[str] = Field(description="the values a task's `checker` may take")
    domains: list[str]
    default_pool_id: int | None
    sources: list[str] = Field(description="sources of recorded outcomes, for composite tasks")
    benchmarks: list[str] = Field(description="the benchmarks of the tasks you can see, for filters")
    vendored_benchmarks: list[str] = Field(
        description="the vendored benchmarks tasks can be made of (`POST /api/tasks/from-benchmark`)"
    )


class RecordedItemOut(Schema):
    source: str
    item_id: str
    split: str
    benchmark: str
    domain: str
    prompt: str = Field(description=f"the first {PROMPT_PREVIEW} characters")
    question: str = Field(
        description=f"what tells the item apart: after few-shot examples, the last block; {PROMPT_PREVIEW} characters"
    )

    @staticmethod
    def resolve_prompt(row: dict[str, Any]) -> str:
        return row["prompt"][:PROMPT_PREVIEW]

    @staticmethod
    def resolve_question(row: dict[str, Any]) -> str:
        return question_of(row["prompt"])[:PROMPT_PREVIEW]


class ItemFilters(Schema):
    source: str = Field("", max_length=50)
    benchmark: str = Field("", max_length=100)
    domain: str = Field("", max_length=20)
    search: str = Field("", max_length=200, description="text in the prompt")


@router.get("/options", response=OptionsOut)
def get_options(request: HttpRequest) -> dict[str, Any]:
    """Policies, cost presets, answer checkers, domains, the default pool for new runs, and your tasks' benchmarks."""
    return run_options(user=current_user(request))


@router.get("/recorded-items", response=list[RecordedItemOut])
@paginate(LimitOffsetPagination)
def list_recorded_items(request: HttpRequest, filters: Query[ItemFilters]) -> QuerySet:
    """Recorded items (one row per item) to build composite tasks from (POST /api/tasks/composite)."""
    return recorded_item_list(**filters.dict())
