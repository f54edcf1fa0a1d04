"""The admissible (model endpoint, primitive) pairs of a run's pool, as a policy sees them."""

from __future__ import annotations

from orchestrator.core.protocol import Pair
from studio.models import Run
from studio.selectors.setup_cache import admissible_rows, pair_of


def admissible_pairs(run: Run) -> tuple[Pair, ...]:
    return tuple(pair_of(row) for row in admissible_rows(run.pool_id))
