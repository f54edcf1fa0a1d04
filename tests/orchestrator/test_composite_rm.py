"""OrchRM over composite plans: features read per leaf, pairs from composite episodes, and the evaluation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from orchestrator.composite import Composite, CompositeCosting, Decompose, Delegate, build_composites
from orchestrator.composite.rm import (
    calls_of,
    composite_pairs,
    leaf_estimates,
    one_part_variants,
    plan_features,
    random_plan,
)
from orchestrator.learning.features import PAIR_DIM
from orchestrator.reward.features import PLAN_DIM, encode_cost
from orchestrator.reward.pairs import RIGHT
from tests.orchestrator.test_composite import PRICE, mixed_files, mixed_table
from tests.orchestrator.test_composite_learned import SMALL

ACC, NODES, DEPTH, SPLIT, COST = range(PAIR_DIM, PLAN_DIM)


def estimates(t, rows):
    """Leaf estimates of `rows`: descriptors all equal to the row, per-item accuracy 0.2 / 0.5 / 0.9
    and estimated cost 1 / 2 / 3 for the three pairs."""
    p = t.n_pairs
    plans = np.zeros((len(rows), p, PLAN_DIM), dtype=np.float32)
    for n, r in enumerate(rows):
        plans[n, :, :PAIR_DIM] = r
        plans[n, :, ACC] = [0.2, 0.5, 0.9][:p]
    cost = np.tile(np.arange(1, p + 1, dtype=float), (len(rows), 1))
    return leaf_estimates(rows, plans, cost, 1.0)


def test_a_plan_is_read_leaf_by_leaf() -> None:
    t = mixed_table(40)
    costing = CompositeCosting(t, planner_price=PRICE, penalty=0.1)
    inner = Composite("c.2", (2, 4), "same_domain", False)
    c = Composite("c", (0, inner, 6), "same_domain", False)
    est = estimates(t, [0, 2, 4, 6])

    whole = Delegate(2)
    calls = calls_of(c, whole, costing)
    assert (calls.nodes, calls.depth, calls.planned) == (1, 1, [])
    assert [(r, col) for r, col, _ in calls.leaves] == [(0, 2), (2, 2), (4, 2), (6, 2)]
    feats, spend = plan_features([c], [whole], est, costing, 1.0)
    assert feats[0, ACC] == pytest.approx(0.9 * (1 - 0.1 * 3))  # the interference factor of 4 parts in one call
    assert feats[0, NODES] == pytest.approx(1 / 8) and feats[0, DEPTH] == pytest.approx(1 / 4) and feats[0, SPLIT] == 0
    assert spend[0] == pytest.approx(4 * 3.0) and feats[0, COST] == pytest.approx(encode_cost(np.asarray(12.0)))
    assert feats[0, :PAIR_DIM] == pytest.approx(np.full(PAIR_DIM, 3.0))  # the mean of the leaves' descriptors

    split = Decompose((0, Decompose((1, 0)), 2))  # the nested part planned again
    calls = calls_of(c, split, costing)
    assert (calls.nodes, calls.depth, [n.key for n in calls.planned]) == (4, 3, ["c", "c.2"])
    feats, spend = plan_features([c], [split], est, costing, 1.0)
    assert feats[0, ACC] == pytest.approx(np.mean([0.2, 0.5, 0.2, 0.9]))
    assert feats[0, SPLIT] == 1 and feats[0, NODES] == pytest.approx(4 / 8) and feats[0, DEPTH] == pytest.approx(3 / 4)
    planners = costing.planner_cost(c) + costing.planner_cost(inner)
    assert planners > 0 and spend[0] == pytest.approx(1 + 2 + 1 + 3 + planners)
    one = Decompose((0, Delegate(1), 2))  # the nested part delegated: one call for its two leaves
    assert calls_of(c, one, costing).nodes == 3 and calls_of(c, one, costing).depth == 2


def test_pairs_from_composite_episodes_hold_what_their_kind_says() -> None:
    t = mixed_table(80)
    costing = CompositeCosting(t, planner_price=PRICE)
    made = build_composites(t, range(40), count=60, seed=4)  # the first source: m2 recorded on every item
    rng = np.random.default_rng(0)
    candidates = [[random_plan(c, costing, rng) for _ in range(4)] for c in made]
    greedy = [Decompose(tuple(2 if isinstance(p, int) else Delegate(2) for p in c.parts)) for c in made]  # m2: right
    pairs = composite_pairs(made, candidates, greedy, costing, seed=0)
    kinds = set(pairs.source)
    assert kinds == {"decomposed_vs_delegated", "one_part", "specialized_over_base"}
    for i, win, lose, source in zip(pairs.composite, pairs.win, pairs.lose, pairs.source, strict=True):
        c = made[i]
        good, bad = costing.outcome(c, win), costing.outcome(c, lose)
        if source == "decomposed_vs_delegated":
            assert good.score >= RIGHT > bad.score and {type(win), type(lose)} == {Decompose, Delegate}
        elif source == "one_part":
            assert isinstance(win, Decompose) and isinstance(lose, Decompose)
            differ = [n for n, (a, b) in enumerate(zip(win.parts, lose.parts, strict=True)) if a != b]
            assert len(differ) == 1 and good.score > bad.score
        else:
            assert win == greedy[i] and good.score >= RIGHT and (bad.score < RIGHT or bad.cost >= good.cost)


def test_no_one_part_pair_where_every_pair_agrees_on_every_part() -> None:
    t = mixed_table(40)
    costing = CompositeCosting(t, planner_price=PRICE)
    c = Composite("c", (0, 2), "same_domain", False)  # math items: m0 and m2 right, m1 wrong
    assert one_part_variants(c, Delegate(2), costing, np.random.default_rng(0)) is None
    variants = one_part_variants(c, Decompose((0, 0)), costing, np.random.default_rng(0))
    assert variants is not None
    good, bad = variants
    assert costing.outcome(c, good).score == 1.0 and costing.outcome(c, bad).score == 0.5


def test_the_evaluation_reports_held_out_pairs_and_best_of_n(tmp_path, capsys) -> None:
    from orchestrator.evaluate_rm_composite import main
    from orchestrator.offline.rm_composite_seed import LINES

    path, prices = mixed_files(tmp_path, 60, m2=lambda k: float(k % 3 != 0))
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({**SMALL, "decompose": {"epochs": 20, "rl_iterations": 2}}))
    rm = tmp_path / "rm.json"
    rm.write_text(json.dumps({"model": {"hidden": 8}, "train": {"epochs": 2, "threads": 1}}))
    argv = ["--outcomes", str(path), "--prices", str(prices), "--seeds", "0", "--train-count", "40",
            "--test-count", "30", "--n", "4", "--draws", "2", "--policy-config", str(policy), "--rm-config", str(rm),
            "--json", str(tmp_path / "out.json")]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Assumptions: a delegated call scores each part" in printed
    assert "multi_node/accuracy" in printed and "rm_matched-n1" in printed and "rm_at_greedy-greedy" in printed
    report = json.loads((tmp_path / "out.json").read_text())
    seed = report["seeds"][0]
    assert set(seed["lines"]) == set(LINES) and len(seed["draw_gains"]["rm_matched-n1"]) == 2
    assert seed["rm_pairs"].get("one_part", 0) > 0 and "correct_over_incorrect" in seed["rm_pairs"]
    assert 0 <= seed["pairs"]["multi_node/accuracy"] <= 1 and seed["pairs"]["multi_node/pairs"] > 0
    low, high = seed["executed_share"]
    assert 0.0 <= low <= high <= 1.0 and "an evaluation device, not a method" in printed
    assert seed["lines"]["rm_node_executed"]["cost"] <= seed["lines"]["n1"]["cost"] + 1e-12  # n1 itself is within
    # The same best-of-N as live runs decide it, through the core: each test composite a run.
    assert set(seed["live"]) == {"engine", "engine_best_of", "engine_best_of_at_greedy"}
    assert "engine_best_of-engine" in printed and "engine_best_of_at_greedy-engine" in printed
    assert seed["best_of_cost"] >= 0
    assert all(0 <= line["score"] <= 1 and line["cost"] > 0 for line in seed["live"].values())
    lines = seed["lines"]
    assert lines["oracle"]["score"] >= max(lines[n]["score"] for n in ("n1", "rm", "rm_matched")) - 1e-9
    # What a better estimate would gain: unshifted, it is rm_node_executed's own gain; moved
    # toward the recorded outcomes, it ranks the test items' pairs better and better.
    takes = seed["discrimination"]
    shifts = takes["shifts"]
    assert shifts[0]["beta"] == 0 and "What a better per-leaf estimate would gain" in printed
    assert shifts[0]["gain"] == pytest.approx(np.mean(seed["draw_gains"]["rm_node_executed-n1"]), abs=1e-6)
    assert shifts[0]["ranked_right"] == pytest.approx(takes["orchrm"])
    ranked = [s["ranked_right"] for s in shifts]
    assert ranked == sorted(ranked) and takes["pairs"] > 0


def test_the_best_of_cost_weight_holds_the_picks_at_the_policys_own_plans_cost() -> None:
    from orchestrator.offline.rm_composite_lines import fit_best_of_cost

    t = mixed_table(40)
    costing = CompositeCosting(t, planner_price=PRICE)
    c = Composite("c", (0, 2), "same_domain", False)
    est = estimates(t, [0, 2])  # pairs 0 / 1 / 2 cost 1 / 2 / 3 on each part
    probability = np.tile([0.2, 0.5, 0.9], (2, 1))
    dear, cheap = Decompose((2, 2)), Decompose((0, 0))
    # Unweighed, the dear plan wins (0.9 against 0.2); it costs 6 against the own plan's 4, so the
    # weight must make the cheap one win: 0.9 - 3w < 0.2 - w, w > 0.35.
    weight = fit_best_of_cost([c], [[dear, cheap]], [Decompose((1, 1))], probability, est, est, costing, 1.0)
    assert weight == pytest.approx(0.35, abs=1e-6) and weight > 0.35
    # Held at the dear plan's own cost, nothing needs weighing.
    assert fit_best_of_cost([c], [[dear, cheap]], [dear], probability, est, est, costing, 1.0) == 0.0


def test_ranked_right_counts_the_pairs_an_estimate_orders_right_first() -> None:
    from orchestrator.offline.rm_composite_lines import ranked_right
    from orchestrator.reward.pairs import TablePairs

    pairs = TablePairs(np.array([0, 0, 1]), np.array([0, 1, 2]), np.array([2, 2, 0]), np.array(["c"] * 3))
    estimate = np.array([[0.9, 0.1, 0.5], [0.3, 0.3, 0.3]])
    # item 0: 0.9 > 0.5 (right first), 0.1 < 0.5 (wrong first); item 1: a tie, half
    assert ranked_right(pairs, estimate) == pytest.approx((1 + 0 + 0.5) / 3)


def test_the_budget_shrinks_until_the_picks_execute_within_the_reference() -> None:
    from orchestrator.offline.rm_composite_candidates import budget_scale

    # Two candidates per composite; the better-scored one is estimated at 1.0 and executes at
    # 1.2, the other at 1.0 both ways. The reference executes at 1.1.
    n = 100
    score = np.tile([1.0, 0.0], (n, 1))
    est = np.ones((n, 2))
    cost = np.tile([1.2, 1.0], (n, 1))
    assert budget_scale(score, est, cost, target_est=2.0, target_cost=1.5) == 1.0  # within already
    est = np.tile([1.0, 0.5], (n, 1))
    share = budget_scale(score, est, cost, target_est=1.0, target_cost=1.1)
    rows = np.arange(n)
    from orchestrator.reward.bestofn import select_matched

    chosen = select_matched(score, est, share * 1.0)
    assert share < 1.0 and cost[rows, chosen].mean() <= 1.1 + 1e-12
    assert cost[rows, select_matched(score, est, 1.0)].mean() > 1.1  # the full budget would overrun


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--lam", "-1"], "--lam must be non-negative"),
        (["--penalty", "2"], "--penalty is within [0, 1]"),
        (["--outcomes", "/nonexistent.jsonl"], "no such file: /nonexistent.jsonl"),
        (["--n", "0"], "argument --n"),
    ],
)
def test_bad_arguments_fail_in_one_line(argv, message, capsys) -> None:
    from orchestrator.evaluate_rm_composite import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
