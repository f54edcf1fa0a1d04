"""Preference pairs: the labeling queue and labels (labeler); pairs, agreement, JSONL export and import (researcher)."""

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema, Status
from ninja.errors import HttpError
from ninja.pagination import LimitOffsetPagination, paginate

from orchestrator.reward.jsonl import record_to_json
from orchestrator.reward.plans import Plan
from studio.api.auth import current_user, role
from studio.api.body import Body
from studio.errors import Invalid
from studio.models import PairSource, PreferencePair, Role, Run, Verdict
from studio.selectors.preferences import (
    QueueItem,
    labeling_progress,
    labeling_queue,
    pair_get,
    pair_list,
    pairs_agreement,
    preferences_export,
)
from studio.services.preferences import pair_create, pair_label, pair_unlabel, preferences_import

router = Router(tags=["preferences"], auth=role(Role.LABELER))

JSONL_TYPES = {"application/x-ndjson", "application/jsonl", "application/jsonlines", "text/plain"}


class PairIn(Body):
    run_a_id: int
    run_b_id: int
    source: PairSource = PairSource.HUMAN
    metadata: dict[str, Any] = Field(default_factory=dict, description='e.g. {"preferred": "a"} when known')


class PairOut(Schema):
    id: int
    task_id: int
    run_a_id: int
    run_b_id: int
    source: str
    metadata: dict[str, Any]
    created_by_id: int | None
    created_at: datetime
    label_count: int = Field(description="labels so far, skips included")


class PairFilters(Schema):
    source: PairSource | None = None


class LabelIn(Body):
    verdict: Verdict = Field(description="a, b, tie or skip; A and B as stored, whatever the display order")
    seconds_spent: float | None = Field(None, ge=0, le=86_400)


class LabelOut(Schema):
    id: int
    pair_id: int
    labeler: str = Field(alias="labeler.username")
    verdict: str
    seconds_spent: float | None
    created_at: datetime


class QueueTaskOut(Schema):
    id: int
    text: str
    benchmark: str
    domain: str


class QueueRunOut(Schema):
    id: int
    policy: str
    status: str
    final_answer: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float
    plan: dict[str, Any] | None = Field(description="the run's plan (orchestrator.reward.plans), or null")


class QueueItemOut(Schema):
    pair_id: int
    source: str
    label_count: int
    task: QueueTaskOut
    swap: bool = Field(description="show run_b on the left; verdicts still name run_a as A")
    margin: float | None = Field(description="the reward model's |score(A) - score(B)|; null when unscored")
    run_a: QueueRunOut
    run_b: QueueRunOut

    @staticmethod
    def resolve_pair_id(obj: QueueItem) -> int:
        return obj.pair.pk

    @staticmethod
    def resolve_source(obj: QueueItem) -> str:
        return obj.pair.source

    @staticmethod
    def resolve_label_count(obj: QueueItem) -> int:
        return int(getattr(obj.pair, "label_count", 0))

    @staticmethod
    def resolve_task(obj: QueueItem) -> Any:
        return obj.pair.task

    @staticmethod
    def resolve_run_a(obj: QueueItem) -> dict[str, Any]:
        return _side(obj.pair.run_a, obj.plan_a)

    @staticmethod
    def resolve_run_b(obj: QueueItem) -> dict[str, Any]:
        return _side(obj.pair.run_b, obj.plan_b)


def _side(run: Run, plan: Plan | None) -> dict[str, Any]:
    return {
        "id": run.pk,
        "policy": run.policy,
        "status": run.status,
        "final_answer": run.final_answer,
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "cost_usd": float(run.cost_usd),
        "latency_s": run.latency_s,
        "plan": plan.to_dict() if plan is not None else None,
    }


class ProgressOut(Schema):
    labeled: int
    total: int
    remaining: int


class QueueOut(Schema):
    items: list[QueueItemOut]
    progress: ProgressOut


class CohenOut(Schema):
    labeler_a: str
    labeler_b: str
    overlap: int
    kappa: float


class FleissOut(Schema):
    raters: int
    pairs: int
    kappa: float


class AgreementOut(Schema):
    pairs: int = Field(description="pairs with at least two non-skip labels")
    labels: int
    labelers: int
    min_overlap: int
    cohen: list[CohenOut]
    fleiss: FleissOut | None


class ImportOut(Schema):
    pairs: int
    tasks: int
    runs: int
    by_source: dict[str, int]


@router.get("/queue", response=QueueOut)
def get_queue(request: HttpRequest, limit: int = Query(10, ge=1, le=100)) -> dict[str, Any]:
    """Pairs you have not labeled, the ones the reward model is least sure of first, with your progress."""
    user = current_user(request)
    return {"items": labeling_queue(user=user, limit=limit), "progress": labeling_progress(user=user)}


@router.post("/pairs/{pair_id}/labels", response={200: LabelOut, 201: LabelOut})
def label_pair(request: HttpRequest, pair_id: int, payload: LabelIn) -> Status:
    """Your verdict on a pair: 201 the first time; later calls replace it (200)."""
    label, created = pair_label(
        pair_id=pair_id, user=current_user(request), verdict=payload.verdict.value, seconds_spent=payload.seconds_spent
    )
    return Status(201 if created else 200, label)


@router.delete("/pairs/{pair_id}/labels", response={204: None})
def unlabel_pair(request: HttpRequest, pair_id: int) -> Status:
    """Take back your verdict on a pair (undo): it is in your queue again. 404 when you gave none."""
    pair_unlabel(pair_id=pair_id, user=current_user(request))
    return Status(204, None)


@router.get("/pairs", response=list[PairOut], auth=role(Role.RESEARCHER))
@paginate(LimitOffsetPagination)
def list_pairs(request: HttpRequest, filters: Query[PairFilters]) -> QuerySet[PreferencePair]:
    """Preference pairs, newest first."""
    return pair_list(source=filters.source.value if filters.source else "")


@router.post("/pairs", response={201: PairOut}, auth=role(Role.RESEARCHER))
def create_pair(request: HttpRequest, payload: PairIn) -> Status:
    """Pair two finished runs of the same task for labeling."""
    pair = pair_create(
        user=current_user(request), run_a_id=payload.run_a_id, run_b_id=payload.run_b_id,
        source=payload.source.value, metadata=payload.metadata,
    )  # fmt: skip
    return Status(201, pair_get(pair_id=pair.pk))


@router.get("/agreement", response=AgreementOut, auth=role(Role.RESEARCHER))
def get_agreement(
    request: HttpRequest,
    source: PairSource | None = None,
    min_overlap: int = Query(5, ge=1, le=100_000, description="pairs two labelers must share for Cohen's κ"),
) -> dict[str, Any]:
    """Cohen's κ per two labelers, Fleiss' κ over the pairs with the usual number of raters."""
    return pairs_agreement(source=source.value if source else "", min_overlap=min_overlap)


@router.get("/export", auth=role(Role.RESEARCHER))
def export_preferences(request: HttpRequest, source: PairSource | None = None) -> HttpResponse:
    """Every pair with a winner as one JSONL line (TRL preference format); see docs/api.md."""
    export = preferences_export(source=source.value if source else "")
    response = HttpResponse("".join(record_to_json(r) + "\n" for r in export.records), "application/x-ndjson")
    response["Content-Disposition"] = 'attachment; filename="preferences.jsonl"'
    response["X-Orchestra-Exported"] = str(len(export.records))
    response["X-Orchestra-Skipped"] = ", ".join(f"{why}={n}" for why, n in sorted(export.skipped.items()))
    return response


@router.post(
    "/import",
    response={201: ImportOut},
    auth=role(Role.RESEARCHER),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {media: {"schema": {"type": "string"}} for media in ("application/x-ndjson", "text/plain")},
        }
    },
)
def import_preferences(request: HttpRequest) -> Status:
    """A JSONL body, one pair a line; all of it or, with any bad line, none (422 listing them)."""
    media = request.content_type or ""
    if media not in JSONL_TYPES:
        raise HttpError(415, f"Send the JSONL as application/x-ndjson or text/plain, not {media or 'no type'}.")
    try:
        text = request.body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Invalid("body", "The request body is not UTF-8 text.") from None
    return Status(201, preferences_import(user=current_user(request), text=text))
