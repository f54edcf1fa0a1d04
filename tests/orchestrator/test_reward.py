"""OrchRM core: pairs from hand-made tables, plans, the Bradley-Terry trainer and best-of-N lines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from orchestrator.learning.dataset import make_context
from orchestrator.reward.bestofn import evaluate_lines, prompt_cost_estimate, select_matched
from orchestrator.reward.features import (
    PLAN_ACC,
    PLAN_COST,
    PLAN_DIM,
    encode_cost,
    plan_cost,
    plan_features,
    table_plan_features,
)
from orchestrator.reward.model import RewardConfig, RewardModel, RewardNet, save_reward_model
from orchestrator.reward.pairs import (
    PairConfig,
    balance,
    build_pairs,
    cheaper_correct,
    correct_over_incorrect,
    dedupe,
    node_level,
    specialized_over_base,
)
from orchestrator.reward.plans import Plan, PlanError, plan_from_dict
from orchestrator.reward.train import PairTensors, RMTrainConfig, bt_loss, pair_metrics, rewards, train_reward
from orchestrator.routing.table import OutcomeTable
from tests.orchestrator.synthetic import table as literal_table
from tests.orchestrator.synthetic_outcomes import synthetic_table

PAIRS = [("big", "direct"), ("mid", "direct"), ("small", "direct")]


def hand_table(score: list[list[float]], cost: list[list[float]], responses: list[list[str | None]]) -> OutcomeTable:
    n = len(score)
    return OutcomeTable(
        item_ids=[f"i{k}" for k in range(n)],
        prompts=[f"prompt {k}" for k in range(n)],
        benchmarks=["b"] * n,
        domains=["math"] * n,
        splits=[None] * n,
        sources=["hand"] * n,
        pairs=list(PAIRS),
        score=np.array(score, dtype=float),
        cost=np.array(cost, dtype=float),
        tokens_in=np.full((n, 3), 10.0),
        tokens_out=np.full((n, 3), 5.0),
        responses=responses,
    )


def as_set(pairs) -> set[tuple[int, int, int]]:
    return set(zip(pairs.item.tolist(), pairs.win.tolist(), pairs.lose.tolist(), strict=True))


# Item 0: big and small right, mid wrong. Item 1: only big right; small not recorded.
TABLE = hand_table(
    score=[[1, 0, 1], [1, 0, np.nan]],
    cost=[[10, 2, 1], [10, 2, np.nan]],
    responses=[["A", "B", "A"], ["C", "D", None]],
)


def test_correct_over_incorrect_pairs_every_right_with_every_wrong() -> None:
    pairs = correct_over_incorrect(TABLE)
    assert as_set(pairs) == {(0, 0, 1), (0, 2, 1), (1, 0, 1)}
    assert set(pairs.source.tolist()) == {"correct_over_incorrect"}


def test_cheaper_correct_needs_both_right_and_the_cost_ratio() -> None:
    assert as_set(cheaper_correct(TABLE, cost_ratio=1.5)) == {(0, 2, 0)}
    assert as_set(cheaper_correct(TABLE, cost_ratio=20)) == set()


def test_node_level_prefers_the_majority_answer_without_reading_scores() -> None:
    # Item 0: "A" twice (big, small), "B" once: A-answers over the B-answer. Item 1: no majority.
    assert as_set(node_level(TABLE)) == {(0, 0, 1), (0, 2, 1)}


def test_specialized_over_base_keeps_only_a_right_trained_choice() -> None:
    seen = set()
    for seed in range(20):  # the base choice is random: mid (wrong) or small (right and cheaper)
        pairs = specialized_over_base(TABLE, np.array([0, 1]), rng=np.random.default_rng(seed))
        seen |= as_set(pairs)
    # Only item 0 (item 1's trained choice was wrong), and never over the cheaper right answer.
    assert seen == {(0, 0, 1)}


def test_dedupe_merges_near_duplicate_items_and_balance_shares_the_budget() -> None:
    pairs = correct_over_incorrect(TABLE)
    canon = np.array([0, 0])  # item 1 is a near-duplicate of item 0
    kept = dedupe(pairs, canon)
    assert as_set(kept) == {(0, 0, 1), (0, 2, 1)}  # (1, 0, 1) repeats (0, 0, 1)
    mixed = build_pairs(TABLE, config=PairConfig(max_pairs=0, per_item=0), seed=0)
    assert mixed.counts() == {"cheaper_correct": 1, "correct_over_incorrect": 3, "node_level": 2}
    small = balance(mixed, 4, np.random.default_rng(0))
    assert small.counts() == {"cheaper_correct": 1, "correct_over_incorrect": 2, "node_level": 1} or small.counts() == {
        "cheaper_correct": 1,
        "correct_over_incorrect": 1,
        "node_level": 2,
    }
    assert len(small) == 4


def test_build_pairs_rejects_an_unknown_source() -> None:
    with pytest.raises(ValueError, match="unknown pair source 'vibes'"):
        build_pairs(TABLE, config=PairConfig(sources=("vibes",)), seed=0)


def test_plan_format_round_trips_and_rejects_cycles() -> None:
    plan = plan_from_dict(
        {
            "nodes": [
                {"key": "a", "model": "m", "primitive": "cot"},
                {"key": "b", "model": "m", "primitive": "cot", "depends_on": ["a"]},
                {"key": "z", "model": "n", "primitive": "direct", "kind": "aggregate", "depends_on": ["a", "b"]},
            ]
        }
    )
    assert plan.decompose and plan.depth() == 3
    assert plan_from_dict(plan.to_dict()) == plan
    with pytest.raises(PlanError, match="cycle"):
        plan_from_dict(
            {
                "nodes": [
                    {"key": "a", "model": "m", "primitive": "p", "depends_on": ["b"]},
                    {"key": "b", "model": "m", "primitive": "p", "depends_on": ["a"]},
                ]
            }
        )
    with pytest.raises(PlanError, match="unknown node 'q'"):
        plan_from_dict({"nodes": [{"key": "a", "model": "m", "primitive": "p", "depends_on": ["q"]}]})


def test_bt_loss_is_the_standard_one() -> None:
    r_w, r_l = torch.tensor([2.0, 0.0]), torch.tensor([0.0, 0.0])
    expected = (
        -(torch.nn.functional.logsigmoid(torch.tensor(2.0)) + torch.nn.functional.logsigmoid(torch.tensor(0.0))) / 2
    )
    assert torch.isclose(bt_loss(r_w, r_l), expected)
    assert bt_loss(r_w, r_l, margin=1.0) > bt_loss(r_w, r_l)


def toy_plans(n: int, gen: torch.Generator) -> torch.Tensor:
    """[n, PLAN_DIM] random plan features, with no accuracy estimate (0.5) for the prior term."""
    plans = torch.randn(n, PLAN_DIM, generator=gen)
    plans[:, PLAN_ACC] = 0.5
    return plans


def toy_pairs(n: int, seed: int) -> PairTensors:
    """Separable: the winner's plan has the larger first feature, whatever the task."""
    gen = torch.Generator().manual_seed(seed)
    a, b = toy_plans(n, gen), toy_plans(n, gen)
    first_a = a[:, 0] > b[:, 0]
    win = torch.where(first_a.unsqueeze(1), a, b)
    lose = torch.where(first_a.unsqueeze(1), b, a)
    return PairTensors(
        task=torch.randn(n, 384 + 8, generator=gen),
        win=win,
        lose=lose,
        source=np.array(["toy"] * n),
        group=np.arange(n),
        lam_lo=torch.zeros(n),
        lam_hi=torch.ones(n),
    )


def test_a_tiny_training_run_beats_chance_on_a_separable_toy_set() -> None:
    net = RewardNet(RewardConfig(hidden=16, dropout=0.0))
    held_out = toy_pairs(400, seed=1)
    before = pair_metrics(net, held_out, "toy")["toy/accuracy"]
    train_reward(net, toy_pairs(2000, seed=0), RMTrainConfig(epochs=5, batch_size=128, lr=5e-3, threads=1))
    after = pair_metrics(net, held_out, "toy")["toy/accuracy"]
    assert after > 0.9, (before, after)
    assert after > before + 0.2


def test_reward_model_saves_loads_and_scores_known_and_unknown_pairs(tmp_path) -> None:
    table, emb = synthetic_table(n=60, seed=0)
    context = make_context(table, emb)
    net = RewardNet(RewardConfig(hidden=8))
    path = tmp_path / "rm.pt"
    save_reward_model(path, net, context, extra={"metrics": {}, "lineage": {"sources": {}}})
    model = RewardModel.load(path)
    plans = [Plan.single("gpt-4", "direct"), Plan.single("never-seen-70b", "cot")]
    scores = model.score(emb[:2], ["math", "math"], plans, lam=0.1)
    assert scores.shape == (2,) and np.isfinite(scores).all()
    assert model.platt == (1.0, 0.0)  # saved without its Platt scaling: sigmoid(reward)
    # A one-node plan of a pool pair has the same features whichever way it is built.
    single = table_plan_features(context, emb[:1], ["math"])[0, 0]
    built = plan_features(context, emb[:1], ["math"], [Plan.single("gpt-4", "direct")])[0]
    assert np.allclose(single, built, atol=1e-5)


def test_best_of_n_lines_on_a_hand_made_table() -> None:
    # 2 items, 3 candidates each (columns). Item 0: only column 2 right; item 1: columns 0 and 1 right.
    table = hand_table(
        score=[[0, 0, 1], [1, 1, 0]],
        cost=[[1, 2, 4], [1, 2, 4]],
        responses=[["X", "X", "Y"], ["Z", "Z", "W"]],
    )
    candidates = np.array([[0, 1, 2], [0, 1, 2]])
    reward = np.array([[0.0, 0.1, 0.9], [0.5, 0.2, 0.1]])  # the RM ranks the right one first on both
    est = np.array([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0]])
    lines = evaluate_lines(table, candidates, reward, est)
    assert lines["n1"].macro_acc == pytest.approx(0.5)  # (1/3 + 2/3) / 2
    assert lines["rm"].macro_acc == 1.0 and lines["rm"].executed_per_query == 1.0
    assert lines["rm"].cost_per_query == pytest.approx((4 + 1) / 2)
    assert lines["majority"].macro_acc == pytest.approx(0.5)  # X on item 0 (wrong), Z on item 1 (right)
    assert lines["majority"].cost_per_query == pytest.approx(7.0)  # all three executed
    assert lines["oracle"].macro_acc == 1.0
    assert all(line.scoring_tokens == 0 for line in lines.values())
    # Matched to n1's estimated cost (7/3): item 0 can no longer afford column 2 at a high penalty.
    chosen = select_matched(reward, est, target=7 / 3)
    assert est[[0, 1], chosen].mean() <= 7 / 3 + 1e-9


def test_the_greedy_lines_execute_the_greedy_plan_and_match_its_cost() -> None:
    table = hand_table(
        score=[[0, 0, 1], [1, 1, 0]],
        cost=[[1, 2, 4], [1, 2, 4]],
        responses=[["X", "X", "Y"], ["Z", "Z", "W"]],
    )
    candidates = np.array([[0, 0, 1], [1, 1, 2]])  # the samples never hold item 0's right pair
    reward = np.array([[0.0, 0.0, 0.5], [0.9, 0.9, 0.1]])
    est = np.array([[1.0, 1.0, 2.0], [2.0, 2.0, 4.0]])
    greedy = (np.array([2, 0]), np.array([4.0, 1.0]))  # pairs 2 and 0: right, then right
    lines = evaluate_lines(table, candidates, reward, est, greedy=greedy)
    assert lines["greedy"].macro_acc == 1.0
    assert lines["greedy"].cost_per_query == pytest.approx((4 + 1) / 2)
    assert lines["greedy"].executed_per_query == 1.0 and lines["greedy"].scoring_tokens == 0
    # Held to the greedy plan's estimated cost (2.5 a query), OrchRM takes item 1's pair 1 (right)
    # and item 0's pair 1 (wrong): a candidate, never the greedy plan itself.
    assert lines["rm_at_greedy"].macro_acc == pytest.approx(0.5)
    assert lines["rm_at_greedy"].cost_per_query == pytest.approx((2 + 2) / 2)
    assert "greedy" not in evaluate_lines(table, candidates, reward, est)


def test_the_matched_selection_spends_the_budget_that_one_common_penalty_leaves() -> None:
    # Four alike items: a cheap candidate (reward 0, cost 1) and a dear one (reward 1, cost 3),
    # the last item's dear one a little better. Any one penalty moves all four or none; a
    # budget of 2 per item pays for two dear candidates, the best two.
    reward = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.2]])
    est = np.array([[1.0, 3.0]] * 4)
    chosen = select_matched(reward, est, target=2.0)
    assert est[np.arange(4), chosen].mean() == 2.0
    assert chosen[3] == 1 and chosen.sum() == 2
    assert (select_matched(reward, est, target=1.0) == 0).all()
    assert (select_matched(reward, est, target=3.0) == 1).all()


def cost_toy_pairs(n: int, seed: int) -> PairTensors:
    """Accuracy pairs: the winner has the larger first feature, whatever it costs. Cost pairs:
    the same first feature, the winner cheaper (they hold for λ in [0.2, 1])."""
    gen = torch.Generator().manual_seed(seed)
    half = n // 2
    a, b = toy_plans(n, gen), toy_plans(n, gen)
    cost_a, cost_b = torch.rand(n, generator=gen), torch.rand(n, generator=gen)  # / cost_ref
    b[half:, 0] = a[half:, 0]
    a_wins = torch.cat([a[:half, 0] > b[:half, 0], cost_a[half:] < cost_b[half:]])
    a[:, PLAN_COST] = torch.from_numpy(encode_cost(cost_a.numpy()))
    b[:, PLAN_COST] = torch.from_numpy(encode_cost(cost_b.numpy()))
    win = torch.where(a_wins.unsqueeze(1), a, b)
    lose = torch.where(a_wins.unsqueeze(1), b, a)
    source = np.array(["correct_over_incorrect"] * half + ["cheaper_correct"] * (n - half))
    cheaper = torch.from_numpy(source == "cheaper_correct")
    return PairTensors(
        task=torch.randn(n, 384 + 8, generator=gen),
        win=win,
        lose=lose,
        source=source,
        group=np.arange(n),
        lam_lo=torch.where(cheaper, 0.2, 0.0),
        lam_hi=torch.where(cheaper, 1.0, 0.05),  # a dearer right answer stops winning at small λ
    )


def test_the_plan_cost_feature_decodes_to_the_cost_it_encodes() -> None:
    cost = np.array([0.0, 0.003, 0.5, 2.0], dtype=np.float32)
    plans = np.zeros((4, PLAN_DIM), dtype=np.float32)
    plans[:, PLAN_COST] = encode_cost(cost)
    assert np.allclose(plan_cost(torch.from_numpy(plans)).numpy(), cost, atol=1e-5)


def test_the_separable_model_ranks_by_accuracy_at_zero_and_trades_cost_as_lambda_grows() -> None:
    net = RewardNet(RewardConfig(hidden=16, dropout=0.0))
    assert net.config.separable
    metrics = train_reward(
        net, cost_toy_pairs(3000, seed=0), RMTrainConfig(epochs=6, batch_size=128, lr=5e-3, threads=1)
    )
    assert metrics["cost/beta"] > 0
    held_out = cost_toy_pairs(600, seed=1)
    accuracy_pairs = held_out.take(np.flatnonzero(held_out.source == "correct_over_incorrect"))
    cost_pairs = held_out.take(np.flatnonzero(held_out.source == "cheaper_correct"))
    assert pair_metrics(net, accuracy_pairs, "a")["a/accuracy"] > 0.9  # judged at λ = 0
    r_win, r_lose = rewards(net, cost_pairs, lam=1.0)
    assert float(((r_win - r_lose) > 0).float().mean()) > 0.9  # at a high λ the cheaper plan wins
    with torch.no_grad():  # at λ = 0 the reward is the accuracy score: cost plays no part
        zero = net(held_out.task, held_out.win, torch.zeros(len(held_out)))
        assert torch.equal(zero, net.accuracy(held_out.task, held_out.win))


def test_a_checkpoint_of_the_joint_model_saved_before_the_separable_option_still_loads(tmp_path) -> None:
    table, emb = synthetic_table(n=60, seed=0)
    context = make_context(table, emb)
    net = RewardNet(RewardConfig(hidden=8, separable=False))
    path = tmp_path / "old.pt"
    save_reward_model(path, net, context, extra={"metrics": {}, "lineage": {}})
    payload = torch.load(path, weights_only=True)
    del payload["config"]["separable"]  # as written before the option existed
    torch.save(payload, path)
    model = RewardModel.load(path)
    assert not model.net.config.separable
    assert np.isfinite(model.score(emb[:1], ["math"], [Plan.single("gpt-4", "direct")], lam=0.3)).all()


def test_a_pairs_cost_before_it_runs_is_the_prompt_at_its_input_price_plus_its_usual_output() -> None:
    nan = float("nan")
    # two pairs; the first priced at 1e-6 $/token in. Train: math items cost 0.5e-3 and 0.7e-3
    # with 100 and 300 prompt tokens, so their output cost is 0.4e-3 each; code items 1e-3 out.
    train = literal_table([[1, 1], [1, 0], [0, 1]], [[0.5e-3, 2e-3], [0.7e-3, nan], [1.1e-3, 3e-3]])
    train = replace(
        train, domains=["math", "math", "code"], tokens_in=np.array([[100.0, 5.0], [300.0, 5.0], [100.0, 5.0]])
    )
    test = literal_table([[1, 1], [1, 1], [1, 1]], [[0, 0], [0, 0], [0, 0]])
    test = replace(test, domains=["math", "code", "chat"], tokens_in=np.array([[1000.0, 7.0], [10.0, 7.0], [nan, 7.0]]))
    fallback = np.full((3, 2), 9.0)
    estimate = prompt_cost_estimate(train, test, np.array([1e-6, nan]), fallback)
    assert estimate[0, 0] == pytest.approx(1e-3 + 0.4e-3)  # a long prompt costs more
    assert estimate[1, 0] == pytest.approx(1e-5 + 1e-3)  # its domain's output cost
    assert estimate[2, 0] == 9.0  # no prompt length known: the fallback
    assert (estimate[:, 1] == 9.0).all()  # no price: the fallback
