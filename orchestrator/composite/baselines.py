"""Fixed ways to solve composites, the learned policy's yardsticks on them.

- `always_delegate`: the best single pair on the whole task, one call (where no pair is
  recorded on every part, a cross-source composite, it decomposes with that pair ranking);
- `always_decompose`: plan, then send every part to the best single pair;
- `decompose_knn`, `decompose_mf`: plan, then route each part with the kNN or MF router;
- `decide_mf`: decompose or delegate, at every composite node, by the MF router's estimates.

All but `decide_mf` decompose a nested part again. Each sweeps λ, the same cost weight as the item
routers' (cost in units of the dearest pair's mean cost per item; for `always_delegate` per
composite).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from orchestrator.baselines.common import (
    DEFAULT_LAMBDAS,
    cost_normalized,
    pair_cost,
    pair_macro_accuracy,
)
from orchestrator.baselines.knn import KnnRouter
from orchestrator.baselines.mf import MfRouter
from orchestrator.composite.build import Composite
from orchestrator.composite.outcome import CompositeCosting, Decompose, Delegate, Plan
from orchestrator.routing.methods import Method
from orchestrator.routing.table import OutcomeTable


class CompositeMethod(Protocol):
    """Fit on train items and composites; plan each test composite at a knob."""

    name: str
    knobs: tuple[float, ...]

    def fit(
        self, costing: CompositeCosting, train_rows: Sequence[int], train: Sequence[Composite], *, seed: int
    ) -> None: ...

    def plans(self, composites: Sequence[Composite], *, knob: float) -> list[Plan]: ...


def decompose_all(composite: Composite, column: Callable[[int], int]) -> Decompose:
    """Decompose at every level; each item part goes to `column(row)`."""
    return Decompose(
        tuple(decompose_all(p, column) if isinstance(p, Composite) else column(p) for p in composite.parts)
    )


class _PerPart:
    """Decomposes everything; each part goes where `choose(rows, λ)` sends it."""

    name = ""
    knobs: tuple[float, ...] = DEFAULT_LAMBDAS
    table: OutcomeTable

    def choose(self, rows: list[int], knob: float) -> list[int]:
        raise NotImplementedError

    def plans(self, composites: Sequence[Composite], *, knob: float) -> list[Plan]:
        rows = sorted({leaf for c in composites for leaf in c.leaves()})
        chosen = dict(zip(rows, self.choose(rows, knob), strict=True))
        return [decompose_all(c, chosen.__getitem__) for c in composites]


class AlwaysDecompose(_PerPart):
    name = "always_decompose"

    def fit(
        self, costing: CompositeCosting, train_rows: Sequence[int], train: Sequence[Composite], *, seed: int
    ) -> None:
        fitting = costing.table.rows(list(train_rows))
        self.table = costing.table
        self._accuracy = np.nan_to_num(pair_macro_accuracy(fitting), neginf=-1.0)
        self._cost = cost_normalized(pair_cost(fitting))
        self._available = costing.table.available()

    def choose(self, rows: list[int], knob: float) -> list[int]:
        utility = np.where(self._available[rows], self._accuracy - knob * self._cost, -np.inf)
        return [int(j) for j in utility.argmax(axis=1)]


class DecomposeRoute(_PerPart):
    """Decompose, then an item router on each part."""

    def __init__(self, name: str, router: Callable[[], Method]) -> None:
        self.name = name
        self._make = router

    def fit(
        self, costing: CompositeCosting, train_rows: Sequence[int], train: Sequence[Composite], *, seed: int
    ) -> None:
        self.table = costing.table
        self._router = self._make()
        self._router.fit(costing.table.rows(list(train_rows)), seed=seed)

    def choose(self, rows: list[int], knob: float) -> list[int]:
        return self._router.route(self.table.rows(rows), knob=knob).final


class AlwaysDelegate:
    """One pair for the whole composite: the best on the train composites at λ."""

    name = "always_delegate"
    knobs: tuple[float, ...] = DEFAULT_LAMBDAS

    def fit(
        self, costing: CompositeCosting, train_rows: Sequence[int], train: Sequence[Composite], *, seed: int
    ) -> None:
        self._costing = costing
        score, cost, ok = costing.delegate_matrix(train)
        count = ok.sum(axis=0)
        self._accuracy = np.where(count > 0, (score * ok).sum(axis=0) / np.maximum(count, 1), -1.0)
        self._cost = cost_normalized(np.where(count > 0, (cost * ok).sum(axis=0) / np.maximum(count, 1), np.inf))
        self._fallback = AlwaysDecompose()
        self._fallback.fit(costing, train_rows, train, seed=seed)
        self._ok: tuple[tuple[str, ...], np.ndarray] | None = None

    def plans(self, composites: Sequence[Composite], *, knob: float) -> list[Plan]:
        keys = tuple(c.key for c in composites)
        if self._ok is None or self._ok[0] != keys:  # one mask serves every λ
            self._ok = (keys, self._costing.delegate_matrix(composites)[2])
        ok = self._ok[1]
        utility = np.where(ok, self._accuracy - knob * np.nan_to_num(self._cost, posinf=1e9), -np.inf)
        out: list[Plan] = []
        split = [c for c, row in zip(composites, ok, strict=True) if not row.any()]
        fallback = iter(self._fallback.plans(split, knob=knob))
        for c, row in enumerate(utility):
            out.append(Delegate(int(row.argmax())) if ok[c].any() else next(fallback))
        return out


class DecideRoute:
    """Decompose or delegate by a router's estimates, at every composite node.

    An option's estimated reward is the sum over its items of p - λ·c (p the router's
    probability that the pair is right, times the interference factor for a delegated call;
    c the pair's mean train cost per item in units of the dearest pair's), less λ times the
    planner's cost in those units when it decomposes. The higher wins; a tie delegates (one
    call). Each item part goes to its pair of highest p - λ·c, as `decompose_<router>` does.
    """

    knobs: tuple[float, ...] = DEFAULT_LAMBDAS

    def __init__(self, name: str, router: Callable[[], KnnRouter | MfRouter]) -> None:
        self.name = name
        self._make = router

    def fit(
        self, costing: CompositeCosting, train_rows: Sequence[int], train: Sequence[Composite], *, seed: int
    ) -> None:
        fitting = costing.table.rows(list(train_rows))
        self._costing = costing
        self._router = self._make()
        self._router.fit(fitting, seed=seed)
        raw = pair_cost(fitting)
        finite = raw[np.isfinite(raw)]
        self._scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        self._cost = raw / self._scale
        self._available = costing.table.available()

    def plans(self, composites: Sequence[Composite], *, knob: float) -> list[Plan]:
        rows = sorted({leaf for c in composites for leaf in c.leaves()})
        predicted = dict(zip(rows, self._router.predict(self._costing.table.rows(rows)), strict=True))
        return [self._plan(c, predicted, knob)[0] for c in composites]

    def _plan(self, c: Composite, predicted: dict[int, np.ndarray], lam: float) -> tuple[Plan, float]:
        """The better option for `c` and its estimated reward."""
        available = self._available
        leaves = list(c.leaves())
        p = np.stack([predicted[leaf] for leaf in leaves])  # [n_leaves, n_pairs]
        one_call = np.where(
            available[leaves].all(axis=0),
            (p * self._costing.factor(len(leaves))).sum(axis=0) - lam * len(leaves) * self._cost,
            -np.inf,
        )
        parts: list[int | Plan] = []
        split = -lam * self._costing.planner_cost(c) / self._scale
        for part in c.parts:
            if isinstance(part, Composite):
                plan, value = self._plan(part, predicted, lam)
                parts.append(plan)
            else:
                utility = np.where(available[part], predicted[part] - lam * self._cost, -np.inf)
                parts.append(int(utility.argmax()))
                value = float(utility.max())
            split += value
        best = int(one_call.argmax())
        if np.isfinite(one_call[best]) and one_call[best] >= split:
            return Delegate(best), float(one_call[best])
        return Decompose(tuple(parts)), split


COMPOSITE_METHODS: dict[str, Callable[[], CompositeMethod]] = {
    "always_delegate": AlwaysDelegate,
    "always_decompose": AlwaysDecompose,
    "decompose_knn": lambda: DecomposeRoute("decompose_knn", KnnRouter),
    "decompose_mf": lambda: DecomposeRoute("decompose_mf", MfRouter),
    "decide_mf": lambda: DecideRoute("decide_mf", MfRouter),
}
