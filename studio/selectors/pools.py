from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, QuerySet

from studio.errors import NotFound
from studio.models import Admissibility, ModelEndpoint, ModelPool, OutcomeImport, Primitive, RecordedOutcome

# The fields of a probe outcome the learned policy calibrates on (`policies.learned_calibration`).
CALIBRATION_FIELDS = (
    "item_id", "prompt", "domain", "benchmark", "model", "primitive", "score", "cost_usd",
    "prompt_tokens", "completion_tokens", "response",
)  # fmt: skip
MAX_CALIBRATIONS = 8  # pools' probe outcomes kept read per process (`pool_calibration`)
_CALIBRATIONS: dict[str, list[dict[str, Any]]] = {}


def pool_list(*, search: str = "") -> QuerySet[ModelPool]:
    pools = ModelPool.objects.order_by("name")
    return pools.filter(name__icontains=search) if search else pools


def pool_get(*, pool_id: int) -> ModelPool:
    pool = ModelPool.objects.filter(pk=pool_id).first()
    if pool is None:
        raise NotFound(f"Pool {pool_id} does not exist.")
    return pool


def pool_models(*, pool_id: int) -> set[str]:
    """The models of the pool's endpoints, as RecordedOutcome names them (no `replay/` prefix)."""
    models = ModelEndpoint.objects.filter(pool_id=pool_id).values_list("model", flat=True)
    return {model.removeprefix("replay/") for model in models}


def calibration_rows(*, source: str, pool_id: int) -> QuerySet[RecordedOutcome]:
    """The recorded outcomes of `source` for the pool's models: its probe outcomes, in import order."""
    return RecordedOutcome.objects.filter(source=source, model__in=pool_models(pool_id=pool_id)).order_by("pk")


def pool_calibration(*, pool_id: int) -> tuple[str, list[dict[str, Any]]] | None:
    """(version, records): the pool's probe outcomes as the learned policy's `calibration`, and
    a name of their version (its `calibration_key`); None when the pool names no calibration
    source or the source has no row for its models.

    Asked at every step of a learned run: four small queries (the pool's source, its models,
    the rows' count and newest row, the newest import: an import that rewrites rows in place
    is a new OutcomeImport) say whether the rows changed, and the rows are read again only
    when they did.
    """
    source = ModelPool.objects.filter(pk=pool_id).values_list("calibration_source", flat=True).first()
    if not source:
        return None
    rows = calibration_rows(source=source, pool_id=pool_id)
    stamp = rows.aggregate(n=Count("pk"), last=Max("pk"))
    if not stamp["n"]:
        return None
    newest_import = OutcomeImport.objects.aggregate(last=Max("pk"))["last"]
    version = f"pool {pool_id}: {source}, {stamp['n']} rows to #{stamp['last']}, import #{newest_import}"
    records = _CALIBRATIONS.get(version)
    if records is None:
        records = [
            {**row, "cost_usd": None if row["cost_usd"] is None else float(row["cost_usd"])}
            for row in rows.values(*CALIBRATION_FIELDS)
        ]
        _CALIBRATIONS[version] = records
        while len(_CALIBRATIONS) > MAX_CALIBRATIONS:
            _CALIBRATIONS.pop(next(iter(_CALIBRATIONS)))
    return version, records


def endpoint_list(*, pool_id: int) -> QuerySet[ModelEndpoint]:
    pool_get(pool_id=pool_id)
    return ModelEndpoint.objects.filter(pool_id=pool_id).order_by("name")


def endpoint_get(*, endpoint_id: int) -> ModelEndpoint:
    endpoint = ModelEndpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        raise NotFound(f"Endpoint {endpoint_id} does not exist.")
    return endpoint


def primitive_list() -> QuerySet[Primitive]:
    return Primitive.objects.order_by("name")


def primitive_get(*, primitive_id: int) -> Primitive:
    primitive = Primitive.objects.filter(pk=primitive_id).first()
    if primitive is None:
        raise NotFound(f"Primitive {primitive_id} does not exist.")
    return primitive


def admissibility_list(*, pool_id: int | None = None, endpoint_id: int | None = None) -> QuerySet[Admissibility]:
    rows = Admissibility.objects.select_related("primitive").order_by("endpoint_id", "primitive__name")
    if pool_id is not None:
        rows = rows.filter(endpoint__pool_id=pool_id)
    if endpoint_id is not None:
        rows = rows.filter(endpoint_id=endpoint_id)
    return rows


def admissibility_get(*, admissibility_id: int) -> Admissibility:
    row = Admissibility.objects.select_related("primitive").filter(pk=admissibility_id).first()
    if row is None:
        raise NotFound(f"Admissibility entry {admissibility_id} does not exist.")
    return row
