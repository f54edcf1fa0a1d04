"""The fixed-rule baselines: random, cheapest, best single, oracle, fixed primitive, always-decompose."""

from __future__ import annotations

import numpy as np

from orchestrator.baselines.common import (
    calibration_table,
    masked_argmax,
    pair_cost,
    pair_macro_accuracy,
    ranked_choice,
)
from orchestrator.routing.methods import NotApplicable, Routes
from orchestrator.routing.table import OutcomeTable


class RandomRouter:
    """A uniformly random available pair per item (seeded at fit)."""

    name = "random"
    knobs: tuple[float, ...] = ()

    def __init__(self) -> None:
        self._seed = 0

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        self._seed = seed

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        rng = np.random.default_rng(self._seed)
        return Routes.single(masked_argmax(rng.random((test.n_items, test.n_pairs)), test.available()))


class CheapestRouter:
    """The pair with the lowest mean cost on the fitting table (train, or the probe for an unseen pool)."""

    name = "cheapest"
    knobs: tuple[float, ...] = ()

    def __init__(self) -> None:
        self._cost = np.zeros(0)

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        self._cost = pair_cost(calibration_table(train, probe))

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        return Routes.single(ranked_choice(-self._cost, test.available()))


class BestSingleRouter:
    """The pair of highest macro pass@1 on the fitting table (train, or the probe); the next best where absent."""

    name = "best_single"
    knobs: tuple[float, ...] = ()

    def __init__(self) -> None:
        self._accuracy = np.zeros(0)
        self._cost = np.zeros(0)

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        table = calibration_table(train, probe)
        self._accuracy, self._cost = pair_macro_accuracy(table), pair_cost(table)

    @property
    def ranking(self) -> list[int]:
        """Columns from best to worst: accuracy, then the cheaper."""
        return sorted(range(len(self._accuracy)), key=lambda j: (-self._accuracy[j], self._cost[j]))

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        preference = np.empty(test.n_pairs)
        preference[self.ranking] = -np.arange(test.n_pairs, dtype=float)
        return Routes.single(ranked_choice(preference, test.available()))


class OracleRouter:
    """UPPER BOUND, reads test scores by definition: the cheapest pair with the item's best recorded score."""

    name = "oracle"
    knobs: tuple[float, ...] = ()

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        return None

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        available = test.available()
        score = np.where(available, test.score, -np.inf)  # [n_items, n_pairs]
        best = score.max(axis=1, keepdims=True)
        cost = np.where(available & (score == best), test.cost, np.inf)
        return Routes.single(masked_argmax(-cost, available))


class FixedPrimitiveRouter:
    """CoT / self-consistency: always the best pair (on the fitting table) that uses one of `primitives`.

    An item without any such pair gets the best other pair. Not applicable when the table
    records none of the primitives.
    """

    knobs: tuple[float, ...] = ()

    def __init__(self, name: str = "self_consistency", primitives: tuple[str, ...] = ("self_consistency", "cot")):
        self.name = name
        self.primitives = primitives
        self._preference = np.zeros(0)

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        table = calibration_table(train, probe)
        eligible = [primitive in self.primitives for _, primitive in table.pairs]
        if not any(eligible):
            raise NotApplicable(f"no recorded pair uses a {'/'.join(self.primitives)} primitive")
        accuracy = pair_macro_accuracy(table)
        ranking = sorted(range(table.n_pairs), key=lambda j: (not eligible[j], -accuracy[j], j))
        self._preference = np.empty(table.n_pairs)
        self._preference[ranking] = -np.arange(table.n_pairs, dtype=float)

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        return Routes.single(ranked_choice(self._preference, test.available()))


class AlwaysDecompose:
    """A fixed decompose-then-solve workflow on composite tasks.

    Outcome tables hold single recorded items, never composite tasks (those are built at run
    time from several items), so on a table this baseline is not applicable.
    """

    name = "always_decompose"
    knobs: tuple[float, ...] = ()

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        raise NotApplicable("the outcome table has no composite tasks to decompose")

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        raise NotApplicable("the outcome table has no composite tasks to decompose")
