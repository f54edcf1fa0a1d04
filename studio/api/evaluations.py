"""Offline evaluations: the learned policy and every baseline on recorded outcomes
(docs/evaluation.md). Researchers and admins start them and read their reports."""

from typing import Any, Literal

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from ninja.pagination import LimitOffsetPagination, paginate

from studio.api.auth import current_user, role
from studio.api.body import Body
from studio.api.jobs import JobOut
from studio.models import EvaluationRun, Role
from studio.selectors.evaluations import evaluation_get, evaluation_list, evaluation_options
from studio.services.evaluations import evaluation_create

router = Router(tags=["evaluations"], auth=role(Role.RESEARCHER))


class EvaluationIn(Body):
    kind: Literal["items", "composites"] = Field(
        "items", description="items: routers on recorded items; composites: composite tasks split or solved whole"
    )
    preset: Literal["quick", "full"] = Field(
        "quick", description="quick: a seeded subset of items and a small learned policy; full: everything"
    )
    outcomes: list[str] = Field(
        default_factory=list, description="shipped outcome files to test on (default llmrouter.jsonl.gz)"
    )
    collections: list[int] = Field(
        default_factory=list, description="collections to test on, beside the outcome files (alone when none is named)"
    )
    train: list[str] = Field(default_factory=list, description="shipped files to fit on instead of a split")
    probe: int = Field(0, ge=0, description="with train: items of an unseen pool revealed for calibration")
    seed: int = Field(0, ge=0)
    methods: list[str] = Field(default_factory=list, description="a subset of the methods (default all)")
    learned: dict[str, Any] | None = Field(None, description="the learned policy's config (docs/learning.md)")
    max_train_items: int | None = Field(None, ge=1, description="overrides the preset's cap on train items")
    max_test_items: int | None = Field(None, ge=1, description="overrides the preset's cap on test items")
    checkpoint_id: int | None = Field(None, description="a policy checkpoint whose training config the learned uses")
    penalty: float = Field(0.0, ge=0, le=1, description="composites: the interference penalty per extra part")
    sensitivity: list[float] = Field(
        default_factory=list, description="composites: more penalties, for a sensitivity table"
    )
    train_count: int | None = Field(None, ge=1, le=20000, description="composites: train composites per seed")
    test_count: int | None = Field(None, ge=1, le=20000, description="composites: test composites per seed")


class EvaluationOut(JobOut):
    config: dict[str, Any]
    checkpoint_id: int | None


class EvaluationDetailOut(EvaluationOut):
    report: dict[str, Any] = Field(
        description="the JSON report of `python -m orchestrator.evaluate --json` (kind items) or of "
        "`evaluate_composite --json` (kind composites: `summary`, `seeds`)"
    )


class EvaluationOptionsOut(Schema):
    presets: dict[str, dict[str, Any]] = Field(description="what each preset sets")
    outcomes: list[str] = Field(description="the shipped outcome files")
    default_outcomes: list[str]
    methods: list[str]
    composites: dict[str, Any] = Field(description="a composite evaluation's presets, default outcomes and methods")


@router.get("/evaluations/options", response=EvaluationOptionsOut)
def get_evaluation_options(request: HttpRequest) -> dict[str, Any]:
    """What a new evaluation may use: presets, outcome files, methods."""
    return evaluation_options()


@router.post("/evaluations", response={201: EvaluationOut})
def create_evaluation(request: HttpRequest, payload: EvaluationIn) -> Status:
    """Queue an evaluation on queue `training`; follow its progress at /api/evaluations/<id>."""
    return Status(201, evaluation_create(user=current_user(request), options=payload.dict()))


@router.get("/evaluations", response=list[EvaluationOut])
@paginate(LimitOffsetPagination)
def list_evaluations(request: HttpRequest) -> QuerySet[EvaluationRun]:
    """Evaluations, newest first (without their reports)."""
    return evaluation_list()


@router.get("/evaluations/{evaluation_id}", response=EvaluationDetailOut)
def get_evaluation(request: HttpRequest, evaluation_id: int) -> EvaluationRun:
    """One evaluation with its config and report."""
    return evaluation_get(evaluation_id=evaluation_id)
