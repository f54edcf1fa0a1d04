"""What the baselines share: per-pair estimates from the fitting table, masked choice."""

from __future__ import annotations

import numpy as np

from orchestrator.routing.methods import Routes
from orchestrator.routing.table import OutcomeTable


def calibration_table(train: OutcomeTable, probe: OutcomeTable | None) -> OutcomeTable:
    """The table whose columns are the test's: the probe for an unseen pool, else train."""
    return probe if probe is not None else train


def pair_cost(table: OutcomeTable) -> np.ndarray:
    """float64 [n_pairs]: each pair's mean recorded cost per item where available; inf where never."""
    available = table.available()
    total = np.where(available, table.cost, 0.0).sum(axis=0)
    count = available.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.inf)


def pair_macro_accuracy(table: OutcomeTable) -> np.ndarray:
    """float64 [n_pairs]: each pair's macro pass@1 over the benchmarks it was recorded on; -inf where never."""
    available = table.available()
    benchmarks = np.asarray(table.benchmarks)
    per_benchmark = []
    for name in sorted(set(table.benchmarks)):
        rows = benchmarks == name
        mask = available[rows]
        total = np.where(mask, table.score[rows], 0.0).sum(axis=0)
        count = mask.sum(axis=0)
        per_benchmark.append(np.where(count > 0, total / np.maximum(count, 1), np.nan))
    if not per_benchmark:
        return np.full(table.n_pairs, -np.inf)
    stacked = np.vstack(per_benchmark)  # [n_benchmarks, n_pairs]
    seen = ~np.isnan(stacked).all(axis=0)
    mean = np.nanmean(np.where(seen, stacked, 0.0), axis=0)
    return np.where(seen, mean, -np.inf)


def masked_argmax(utility: np.ndarray, available: np.ndarray) -> list[int]:
    """Per row, the available column of highest utility (ties: the lowest index).

    A row with no available column gets column 0, which the evaluation counts as a violation.
    """
    masked = np.where(available, utility, -np.inf)  # [n_items, n_pairs]
    return [int(j) for j in masked.argmax(axis=1)]


def ranked_choice(preference: np.ndarray, available: np.ndarray) -> list[int]:
    """Per row, the most preferred available column under one fixed ranking of the pairs."""
    return masked_argmax(np.broadcast_to(preference, available.shape), available)


def cost_normalized(cost: np.ndarray) -> np.ndarray:
    """Costs divided by the most expensive finite one, so λ reads in "fractions of the dearest pair"."""
    finite = cost[np.isfinite(cost)]
    scale = finite.max() if finite.size and finite.max() > 0 else 1.0
    return cost / scale


DEFAULT_LAMBDAS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 100.0)


class PredictedAccuracyRouter:
    """Routes each item to the pair with the best predicted accuracy − λ·normalized cost.
    Subclasses fit `_cost` (per pair, normalized) and implement `predict`."""

    _cost: np.ndarray
    _memo: tuple[tuple[str, ...], np.ndarray] | None = None

    def predict(self, test: OutcomeTable) -> np.ndarray:
        """float64 [n_test, n_pairs]: predicted probability of a correct answer."""
        raise NotImplementedError

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        lam = 0.0 if knob is None else knob
        key = tuple(test.item_ids)
        if self._memo is None or self._memo[0] != key:  # one prediction serves every λ
            self._memo = (key, self.predict(test))
        utility = self._memo[1] - lam * self._cost[None, :]
        return Routes.single(masked_argmax(utility, test.available()))
