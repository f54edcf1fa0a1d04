"""The zero router (RouterBench): fixed pairs and random mixes of two, no look at the prompt.

Fit on the train items (or the probe of an unseen pool): each pair's mean cost and macro
pass@1 there, and the non-decreasing hull of those points. Every vertex of the hull is a
fixed pair; between two neighbouring vertices, sending a share `f` of the items to the
dearer one (drawn at random per item) gives the point that far along the segment. The
knobs walk the hull: knob `s + f` is vertex `s` mixed with vertex `s + 1` at share `f`
(f in 0, 1/4, 1/2, 3/4), and the last knob is the last vertex alone. Where a chosen pair
is not recorded on an item, the available pair nearest in cost takes its place.

Any router that cannot beat this has learned nothing from the prompts.
"""

from __future__ import annotations

import numpy as np

from orchestrator.baselines.common import calibration_table, masked_argmax, pair_cost, pair_macro_accuracy
from orchestrator.routing.methods import NotApplicable, Routes
from orchestrator.routing.metrics import nondecreasing_hull
from orchestrator.routing.table import OutcomeTable

SHARES = (0.0, 0.25, 0.5, 0.75)


class ZeroRouter:
    """Fixed pairs on the train (or probe) hull, and mixes of two neighbours on it."""

    name = "zero"

    def __init__(self) -> None:
        self.knobs: tuple[float, ...] = ()
        self._vertices: list[int] = []  # columns on the hull, cheapest first
        self._cost = np.zeros(0)
        self._seed = 0

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        table = calibration_table(train, probe)
        accuracy, self._cost = pair_macro_accuracy(table), pair_cost(table)
        known = [j for j in range(table.n_pairs) if np.isfinite(self._cost[j]) and np.isfinite(accuracy[j])]
        if not known:
            raise NotApplicable("no pair has a recorded score and cost to fit on")
        hull = nondecreasing_hull([(self._cost[j], accuracy[j]) for j in known], origin=False)
        # each vertex as its column: of pairs at one point, the first
        self._vertices = [next(j for j in known if (self._cost[j], accuracy[j]) == vertex) for vertex in hull]
        last = len(self._vertices) - 1
        self.knobs = tuple(float(s + f) for s in range(last) for f in SHARES) + (float(last),)
        self._seed = seed

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        step = float(self.knobs[-1] if knob is None else knob)
        s = min(int(np.floor(step)), len(self._vertices) - 1)
        share = step - s
        cheap, dear = self._vertices[s], self._vertices[min(s + 1, len(self._vertices) - 1)]
        draws = np.random.default_rng([self._seed, 7]).random(test.n_items)
        chosen = np.where(draws < share, dear, cheap)
        # the chosen pair first; elsewhere the pair nearest to it in cost
        log_cost = np.log(np.maximum(self._cost, 1e-12))
        gap = -np.abs(log_cost[None, :] - log_cost[chosen][:, None])
        gap[np.arange(test.n_items), chosen] = np.inf
        return Routes.single(masked_argmax(np.nan_to_num(gap, nan=-np.inf), test.available()))
