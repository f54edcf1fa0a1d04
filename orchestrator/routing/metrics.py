"""Metrics of a routing run: pass@1, cost per query, and the frontier metrics AIQ, APGR, CPT.

All functions are pure. Conventions:
- A *point* is (cost per query in USD, macro pass@1) of one method at one knob value.
- The *hull* H(c) of a method's points is their non-decreasing upper concave hull
  (RouterBench, "non-decreasing convex hull"), linear between vertices: mixing two
  operating points at random achieves any point on the segment between them. Every method
  can also abstain (cost 0, accuracy 0), so the origin is always one of the points: below
  its cheapest point a method mixes with abstaining, and H rises linearly from (0, 0).
  After the most accurate vertex H is flat (a budget can always go unspent).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from orchestrator.routing.methods import Routes
from orchestrator.routing.table import OutcomeTable

Point = tuple[float, float]  # (cost per query USD, accuracy)


@dataclass(frozen=True)
class RoutedOutcome:
    """What a method's routes achieved, item by item."""

    score: np.ndarray  # float64 [n_items]: the recorded score of the final pair (0 on violation)
    cost: np.ndarray  # float64 [n_items]: USD, the sum over executed pairs
    calls: np.ndarray  # int64 [n_items]: pairs executed
    violations: int  # items where some executed pair was unavailable


def score_routes(test: OutcomeTable, routes: Routes) -> RoutedOutcome:
    """Score routes on the recorded outcomes of `test`.

    score_i = score[i, final_i]; cost_i = sum_{j in executed_i} cost[i, j]. An item whose
    routes touch an unavailable pair (or a column out of range) is a violation: it scores 0
    at the maximum available cost of that item, summed over its calls.
    """
    if len(routes.final) != test.n_items:
        raise ValueError(f"routes cover {len(routes.final)} items, the test table has {test.n_items}")
    available = test.available()
    worst = np.where(available, test.cost, -np.inf).max(axis=1, initial=0.0)  # [n_items]
    score = np.zeros(test.n_items)
    cost = np.zeros(test.n_items)
    calls = np.zeros(test.n_items, dtype=np.int64)
    violations = 0
    for i, (executed, final) in enumerate(zip(routes.executed, routes.final, strict=True)):
        calls[i] = len(executed)
        if all(0 <= j < test.n_pairs and available[i, j] for j in executed):
            score[i] = test.score[i, final]
            cost[i] = float(test.cost[i, list(executed)].sum())
        else:
            violations += 1
            cost[i] = worst[i] * len(executed)
    return RoutedOutcome(score=score, cost=cost, calls=calls, violations=violations)


def group_accuracy(scores: np.ndarray, groups: Sequence[str]) -> dict[str, float]:
    """Mean score per group (benchmark or domain): acc_g = mean_{i in g} score_i."""
    labels = np.asarray(groups)
    return {str(g): float(scores[labels == g].mean()) for g in sorted(set(groups))}


def macro_accuracy(scores: np.ndarray, benchmarks: Sequence[str]) -> float:
    """Macro pass@1: the mean over benchmarks of each benchmark's mean score."""
    per_benchmark = group_accuracy(scores, benchmarks)
    return float(np.mean(list(per_benchmark.values()))) if per_benchmark else float("nan")


def cost_per_query(costs: np.ndarray) -> float:
    """Mean USD per test item."""
    return float(np.mean(costs)) if len(costs) else float("nan")


def nondecreasing_hull(points: Sequence[Point], *, origin: bool = True) -> list[Point]:
    """The vertices of the non-decreasing upper concave hull, sorted by cost, from (0, 0)
    (from the cheapest point with `origin=False`, as RouterBench draws it).

    Upper hull by Andrew's monotone chain over the points and the abstain point (0, 0),
    sorted by (cost, accuracy); the vertices after the most accurate one are dropped (H is
    flat from there).
    """
    pts = sorted({*([(0.0, 0.0)] if origin else []), *((float(c), float(a)) for c, a in points)})
    # of several points at one cost only the most accurate matters
    best: dict[float, float] = {}
    for c, a in pts:
        best[c] = max(a, best.get(c, -np.inf))
    hull: list[Point] = []
    for p in sorted(best.items()):
        while len(hull) >= 2 and _cross(hull[-2], hull[-1], p) >= 0:
            hull.pop()
        hull.append(p)
    peak = max(range(len(hull)), key=lambda k: (hull[k][1], -hull[k][0])) if hull else -1
    return hull[: peak + 1]


def _cross(o: Point, a: Point, b: Point) -> float:
    """z of (a - o) x (b - o): >= 0 when a lies on or below the segment o-b."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def hull_value(hull: Sequence[Point], cost: float) -> float:
    """H(cost): linear between vertices, flat after the last (0 for an empty hull)."""
    if not hull or cost < hull[0][0]:
        return 0.0
    xs = np.array([c for c, _ in hull])
    ys = np.array([a for _, a in hull])
    return float(np.interp(cost, xs, ys))


def _integral(hull: Sequence[Point], lo: float, hi: float) -> float:
    """The exact integral of H over [lo, hi] (trapezoids between the knots; H is piecewise linear)."""
    if hi <= lo or not hull:
        return 0.0
    start = max(lo, hull[0][0])
    if start >= hi:
        return 0.0
    knots = sorted({start, hi, *(c for c, _ in hull if start < c < hi)})
    values = [hull_value(hull, c) for c in knots]
    return float(sum((knots[k + 1] - knots[k]) * (values[k] + values[k + 1]) / 2 for k in range(len(knots) - 1)))


def aiq(points: Sequence[Point], cost_range: tuple[float, float]) -> float:
    """AIQ (RouterBench): the mean of the hull over a cost range shared by every method.

    AIQ = 1/(c_hi - c_lo) * integral_{c_lo}^{c_hi} H(c) dc, with H the non-decreasing hull
    of the points and (0, 0). The evaluation takes [c_lo, c_hi]
    from the cheapest to the most expensive single model on the test items. With
    c_hi == c_lo it is H(c_lo).
    """
    lo, hi = cost_range
    hull = nondecreasing_hull(points)
    if hi <= lo:
        return hull_value(hull, lo)
    return _integral(hull, lo, hi) / (hi - lo)


def aiq_routerbench(points: Sequence[Point], c_max: float) -> float:
    """AIQ as RouterBench defines it: the area under the non-decreasing hull of the points
    (no abstain point: 0 below the cheapest), extended flat to `c_max`, divided by `c_max`.

    AIQ_RB = 1/c_max * integral_0^{c_max} H(c) dc. The project's `aiq` instead starts the
    hull at (0, 0) and averages it over the single pairs' cost range; both are printed.
    """
    hull = nondecreasing_hull([(c, a) for c, a in points if c <= c_max], origin=False)
    if not hull or c_max <= 0:
        return float("nan")
    knots = [c for c, _ in hull] + [c_max]
    values = [a for _, a in hull] + [hull[-1][1]]
    area = sum((knots[k + 1] - knots[k]) * (values[k] + values[k + 1]) / 2 for k in range(len(knots) - 1))
    return float(area / c_max)


def dominated(
    points: Sequence[Point], singles: Sequence[Point], frontier: Sequence[Point] = (), *, tolerance: float = 1e-9
) -> list[Point]:
    """The points beaten at no more cost with more accuracy (by > `tolerance`): by a single
    point of `singles`, or by the hull of `frontier` (a router's points and the mixes of two
    of them, from its cheapest point on)."""
    hull = nondecreasing_hull(frontier, origin=False) if frontier else []
    return [
        (c, a)
        for c, a in points
        if any(sc <= c + tolerance and sa > a + tolerance for sc, sa in singles)
        or (bool(hull) and hull_value(hull, c) > a + tolerance)
    ]


@dataclass(frozen=True)
class Anchors:
    """The two single models the RouteLLM metrics are anchored on."""

    weak: Point  # the cheapest single model (cost, accuracy)
    strong: Point  # the most accurate single model (cost, accuracy)


def pgr(accuracy: float, anchors: Anchors) -> float:
    """Performance gap recovered: (acc - acc_weak) / (acc_strong - acc_weak)."""
    gap = anchors.strong[1] - anchors.weak[1]
    return (accuracy - anchors.weak[1]) / gap if gap > 0 else float("nan")


def apgr(points: Sequence[Point], anchors: Anchors) -> float:
    """APGR (RouteLLM), continuous form: the mean PGR of the hull between the anchors' costs.

    APGR = 1/(c_s - c_w) * integral_{c_w}^{c_s} PGR(H(c)) dc, where PGR(a) =
    (a - a_w)/(a_s - a_w). RouteLLM averages PGR over the fraction of calls sent to the
    strong model; with two models that fraction is linear in cost, so this is the same
    quantity for any pool. (Below its cheapest point a method mixes with abstaining, so PGR
    can be negative there.)
    """
    (c_w, a_w), (c_s, a_s) = anchors.weak, anchors.strong
    if a_s <= a_w or c_s <= c_w:
        return float("nan")
    hull = nondecreasing_hull(points)
    mean_acc = _integral(hull, c_w, c_s) / (c_s - c_w)
    return (mean_acc - a_w) / (a_s - a_w)


def cpt(points: Sequence[Point], anchors: Anchors, target: float) -> float | None:
    """CPT(target) (RouteLLM): the cost needed to recover `target` of the weak-strong gap.

    Returned as a fraction of the strong model's cost per query: c* / c_s, where c* is the
    least cost with PGR(H(c*)) >= target. None when the hull never reaches it.
    """
    needed = anchors.weak[1] + target * (anchors.strong[1] - anchors.weak[1])
    hull = nondecreasing_hull(points)
    if not hull or hull[-1][1] < needed or anchors.strong[0] <= 0:
        return None
    if hull[0][1] >= needed:
        c_star = hull[0][0]
    else:
        k = next(k for k in range(1, len(hull)) if hull[k][1] >= needed)
        (c0, a0), (c1, a1) = hull[k - 1], hull[k]
        c_star = c0 + (needed - a0) * (c1 - c0) / (a1 - a0)
    return c_star / anchors.strong[0]
