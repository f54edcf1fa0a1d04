"""The metric functions, against cases worked out by hand in the comments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.routing import metrics
from orchestrator.routing.methods import Routes
from tests.orchestrator.synthetic import table

# Four points and the abstain point (0,0); by hand the upper concave hull is
# (0,0)-(1,.5)-(3,.9)-(4,.8): (2,.6) lies below the segment (1,.5)-(3,.9), whose value at 2 is .7,
# and (1,.5) lies above the segment (0,0)-(3,.9) (.3 at 1). The non-decreasing hull stops at the peak (3,.9).
POINTS = [(1.0, 0.5), (2.0, 0.6), (3.0, 0.9), (4.0, 0.8)]
ANCHORS = metrics.Anchors(weak=(1.0, 0.5), strong=(3.0, 0.9))


def test_macro_is_the_mean_over_benchmarks_not_items():
    scores = np.array([1.0, 0.0, 0.0, 1.0])
    # benchmark a: 1/3, benchmark b: 1 -> macro (1/3 + 1)/2 = 2/3, while the item mean is 1/2
    assert metrics.macro_accuracy(scores, ["a", "a", "a", "b"]) == pytest.approx(2 / 3)
    assert metrics.group_accuracy(scores, ["a", "a", "a", "b"]) == pytest.approx({"a": 1 / 3, "b": 1.0})
    assert metrics.cost_per_query(np.array([0.1, 0.3])) == pytest.approx(0.2)


def test_hull_drops_points_under_it_and_after_the_peak():
    assert metrics.nondecreasing_hull(POINTS) == [(0.0, 0.0), (1.0, 0.5), (3.0, 0.9)]
    # same cost: only the most accurate counts; a point with both higher cost and lower accuracy is dropped
    assert metrics.nondecreasing_hull([(1, 0.2), (1, 0.4), (2, 0.3)]) == [(0.0, 0.0), (1.0, 0.4)]
    # (1,.1) lies under the line from abstaining (0,0) to (2,.9), which gives .45 at cost 1
    assert metrics.nondecreasing_hull([(1, 0.1), (2, 0.9)]) == [(0.0, 0.0), (2.0, 0.9)]
    hull = metrics.nondecreasing_hull(POINTS)
    assert metrics.hull_value(hull, 0.5) == pytest.approx(0.25)  # half-way from abstaining to (1,.5)
    assert metrics.hull_value(hull, 2.0) == pytest.approx(0.7)
    assert metrics.hull_value(hull, 10.0) == pytest.approx(0.9)


def test_aiq_by_hand():
    # over [0, 4]: (0+.5)/2*1 = .25 on [0,1] + (.5+.9)/2*2 = 1.4 on [1,3] + .9*1 on [3,4] = 2.55; /4 = .6375
    assert metrics.aiq(POINTS, (0.0, 4.0)) == pytest.approx(0.6375)
    # over [1, 3]: 1.4 / 2 = .7
    assert metrics.aiq(POINTS, (1.0, 3.0)) == pytest.approx(0.7)
    # one point (2, .8) over [1, 3]: from (0,0) H is .4 at 1, .8 at 2 -> (.4+.8)/2 + .8 = 1.4; /2 = .7
    assert metrics.aiq([(2.0, 0.8)], (1.0, 3.0)) == pytest.approx(0.7)
    # a point left of the range is flat over it
    assert metrics.aiq([(0.5, 0.6)], (1.0, 3.0)) == pytest.approx(0.6)


def test_apgr_by_hand():
    # mean hull accuracy over the anchors' costs [1, 3] is .7 -> PGR (.7 - .5)/(.9 - .5) = .5
    assert metrics.apgr(POINTS, ANCHORS) == pytest.approx(0.5)
    # one point (2, .95): H is .475 at 1, .95 on [2,3] -> ((.475+.95)/2 + .95)/2 = .83125 -> (.83125-.5)/.4
    assert metrics.apgr([(2.0, 0.95)], ANCHORS) == pytest.approx(0.828125)
    # the weak anchor alone recovers nothing
    assert metrics.apgr([ANCHORS.weak], ANCHORS) == pytest.approx(0.0)
    assert metrics.pgr(0.8, ANCHORS) == pytest.approx(0.75)


def test_cpt_by_hand():
    # PGR 50% needs accuracy .5 + .5*.4 = .7, reached on (1,.5)-(3,.9) at cost 1 + .2*(2/.4) = 2 -> 2/3 of strong's 3
    assert metrics.cpt(POINTS, ANCHORS, 0.5) == pytest.approx(2 / 3)
    # PGR 80% needs .82, at cost 1 + .32*5 = 2.6 -> 2.6/3
    assert metrics.cpt(POINTS, ANCHORS, 0.8) == pytest.approx(2.6 / 3)
    # a method that never gets past .6 never recovers 50%
    assert metrics.cpt([(1.0, 0.6)], ANCHORS, 0.5) is None
    # one point (.3, .95): mixing it with abstaining reaches .82 at .3 * .82/.95
    assert metrics.cpt([(0.3, 0.95)], ANCHORS, 0.8) == pytest.approx(0.3 * 0.82 / 0.95 / 3)


def test_score_routes_sums_executed_costs_and_counts_violations():
    t = table(
        [[1, 0, float("nan")], [0, 1, 1]],
        [[0.1, 0.5, 0.2], [0.1, 0.5, 0.3]],
    )
    # item 0: cascade 0 -> 1, final 1: score 0, cost .6; item 1: pair 2 alone: score 1, cost .3
    out = metrics.score_routes(t, Routes(executed=[(0, 1), (2,)], final=[1, 2]))
    assert out.score.tolist() == [0.0, 1.0] and out.cost == pytest.approx([0.6, 0.3])
    assert out.calls.tolist() == [2, 1] and out.violations == 0
    # pair 2 is not recorded on item 0: score 0 at the item's dearest available cost (.5)
    bad = metrics.score_routes(t, Routes.single([2, 1]))
    assert bad.violations == 1 and bad.score.tolist() == [0.0, 1.0] and bad.cost == pytest.approx([0.5, 0.5])


def test_routes_final_must_be_executed():
    with pytest.raises(ValueError, match="not executed"):
        Routes(executed=[(0,)], final=[1])


def test_degenerate_anchors_give_nan():
    flat = metrics.Anchors(weak=(1.0, 0.5), strong=(2.0, 0.5))
    assert math.isnan(metrics.apgr(POINTS, flat))


def test_aiq_by_routerbench_definition_by_hand():
    # hull without the abstain point: (1,.5)-(3,.9), flat to c_max 4; area (.5+.9)/2*2 = 1.4 on [1,3]
    # + .9 on [3,4] = 2.3, nothing below the cheapest point; / 4 = .575
    assert metrics.aiq_routerbench(POINTS, 4.0) == pytest.approx(0.575)
    assert metrics.nondecreasing_hull(POINTS, origin=False) == [(1.0, 0.5), (3.0, 0.9)]
    # one point: the flat extension alone, (4 - 2) * .8 / 4
    assert metrics.aiq_routerbench([(2.0, 0.8)], 4.0) == pytest.approx(0.4)
    # points dearer than c_max do not count, not even to hide a point under their segment:
    # (2,.55) is under (1,.5)-(5,.9) but a vertex without (5,.9): .5 on [1,2] is (.5+.55)/2 = .525,
    # then .55 flat on [2,4] = 1.1; (.525 + 1.1) / 4 = .40625
    assert metrics.aiq_routerbench([(1.0, 0.5), (2.0, 0.55), (5.0, 0.9)], 4.0) == pytest.approx(0.40625)
    assert metrics.aiq_routerbench([(5.0, 0.9)], 4.0) != metrics.aiq_routerbench([(5.0, 0.9)], 4.0)  # NaN


def test_dominated_by_a_single_or_by_a_mix_of_two():
    singles = [(1.0, 0.5), (3.0, 0.9)]
    # (1,.4): (1,.5) costs no more and is better; (2,.65): the mix of the two singles gives .7 at 2
    # (2,.75) beats that mix; (.5,.45) is cheaper than every single
    points = [(1.0, 0.4), (2.0, 0.65), (2.0, 0.75), (0.5, 0.45)]
    assert metrics.dominated(points, singles) == [(1.0, 0.4)]
    assert metrics.dominated(points, singles, frontier=singles) == [(1.0, 0.4), (2.0, 0.65)]
    assert metrics.dominated([(1.0, 0.5)], singles) == []  # a tie is not beaten


def test_a_router_against_its_own_other_points():
    from orchestrator.evaluate_frontier import own_dominated

    singles = {"cheap": (1.0, 0.5), "dear": (3.0, 0.9)}
    # (2,.69) is under the mix of its neighbours (1.5,.62) and (3,.9): .713; (1.5,.62) is above
    # the mix of (1,.5) and (3,.9): .6; the two singles' own points tie them
    points = [(1.0, 0.5), (1.5, 0.62), (2.0, 0.69), (3.0, 0.9)]
    assert own_dominated(points, singles) == [(2.0, 0.69)]
    assert own_dominated([(1.0, 0.5), (3.0, 0.9)], singles) == []
