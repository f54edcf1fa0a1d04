"""The admissible (model endpoint, primitive) pairs of a run's pool, as a policy sees them."""

from __future__ import annotations

from orchestrator.protocol import Pair, PairRef
from studio.models import Admissibility, Run


def _float(value: object) -> float | None:
    return float(value) if value is not None else None  # type: ignore[arg-type]


def admissible_pairs(run: Run) -> tuple[Pair, ...]:
    rows = (
        Admissibility.objects.filter(endpoint__pool_id=run.pool_id, allowed=True, endpoint__enabled=True)
        .select_related("endpoint", "primitive")
        .order_by("endpoint_id", "primitive__name")
    )
    return tuple(
        Pair(
            ref=PairRef(row.endpoint_id, row.primitive.name),
            model=row.endpoint.model,
            input_cost_per_mtok=_float(row.endpoint.input_cost_per_mtok),
            output_cost_per_mtok=_float(row.endpoint.output_cost_per_mtok),
            context_window=row.endpoint.context_window,
            descriptors=row.endpoint.descriptors,
        )
        for row in rows
    )
