"""Each baseline on a tiny table where the right answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.baselines import (
    BASELINES,
    AlwaysDecompose,
    BestSingleRouter,
    CascadeRouter,
    CheapestRouter,
    FixedPrimitiveRouter,
    KnnRouter,
    MfRouter,
    OracleRouter,
    RandomRouter,
)
from orchestrator.baselines.cascade import CascadeConfig, pareto_chain
from orchestrator.baselines.knn import KnnConfig
from orchestrator.baselines.mf import MfConfig
from orchestrator.routing.methods import NotApplicable
from tests.orchestrator.synthetic import table, topic_embed

NAN = float("nan")
# three pairs: m0 cheap and weak, m1 mid, m2 dear and strong
COST = [0.1, 0.5, 2.0]


def pool(score, prompts=None, responses=None, cost=COST):
    return table(score, [cost] * len(score), prompts=prompts, responses=responses)


def topics(n: int) -> tuple[list[list[float]], list[str]]:
    """Math items only m0 gets right, code items only m1 gets right; m2 gets both."""
    score = [[1.0, 0.0, 1.0] if k % 2 == 0 else [0.0, 1.0, 1.0] for k in range(n)]
    prompts = [f"math problem {k}" if k % 2 == 0 else f"code task {k}" for k in range(n)]
    return score, prompts


def test_cheapest_picks_the_cheapest_available():
    train = pool([[0, 1, 1]] * 3)
    test = pool([[1, 1, 1], [NAN, 1, 1]])
    method = CheapestRouter()
    method.fit(train, seed=0)
    routes = method.route(test)
    assert routes.final == [0, 1] and routes.executed == [(0,), (1,)]


def test_best_single_is_chosen_on_train_then_on_the_probe():
    train = pool([[0, 1, 0], [0, 1, 1]])  # m1 best on train
    probe = pool([[1, 0, 0], [1, 0, 0]])  # m0 best on the probe
    test = pool([[0, 0, 0], [0, NAN, 0]])
    method = BestSingleRouter()
    method.fit(train, seed=0)
    # on item 1 m1 is not recorded: the next best on train (m2, .5) takes it
    assert method.route(test).final == [1, 2]
    method.fit(train, seed=0, probe=probe)
    assert method.route(test).final == [0, 0]


def test_oracle_picks_the_cheapest_correct_pair():
    test = pool([[0, 1, 1], [1, 1, 1], [0, 0, 0], [0, NAN, 1]])
    method = OracleRouter()
    method.fit(test, seed=0)
    # none correct on item 2: the cheapest
    assert method.route(test).final == [1, 0, 0, 2]


def test_random_is_seeded_and_only_routes_to_available_pairs():
    rng = np.random.default_rng(0)
    score = np.where(rng.random((200, 3)) < 0.4, NAN, 1.0)
    score[:, 2] = 1.0
    test = pool(score.tolist())
    method = RandomRouter()
    method.fit(test, seed=3)
    first, second = method.route(test).final, method.route(test).final
    assert first == second
    assert all(test.available()[i, j] for i, j in enumerate(first))
    assert len(set(first)) == 3


def test_knn_routes_by_topic_and_lambda_moves_it_to_the_cheapest():
    score, prompts = topics(40)
    train = pool(score, prompts)
    test = pool([[1, 0, 1], [0, 1, 1]], ["math question new", "code question new"])
    method = KnnRouter(KnnConfig(k=5), embed_fn=topic_embed)
    method.fit(train, seed=0)
    # at λ=0 the ties between a correct cheap pair and m2 go to the lower index
    assert method.route(test, knob=0.0).final == [0, 1]
    assert method.route(test, knob=100.0).final == [0, 0]


def test_knn_on_an_unseen_pool_uses_the_probe():
    score, prompts = topics(20)
    train = pool(score, prompts)
    probe = pool([[r[1], r[0]] for r in score], prompts, cost=[0.1, 0.1])  # the new pool swaps the skills
    test = pool([[0, 1], [1, 0]], ["math question new", "code question new"], cost=[0.1, 0.1])
    method = KnnRouter(KnnConfig(k=5), embed_fn=topic_embed)
    method.fit(train, seed=0, probe=probe)
    assert method.route(test, knob=0.0).final == [1, 0]


def test_mf_learns_which_pair_solves_which_topic():
    score, prompts = topics(60)
    train = pool(score, prompts, cost=[0.1, 0.1, 0.1])
    test = pool([[1, 0, 1], [0, 1, 1]], ["math question new", "code question new"], cost=[0.1, 0.1, 0.1])
    method = MfRouter(MfConfig(dim=8, epochs=300, lr=0.05), embed_fn=topic_embed)
    method.fit(train, seed=0)
    p = method.predict(test)
    assert p[0, 0] > 0.8 > 0.2 > p[0, 1] and p[1, 1] > 0.8 > 0.2 > p[1, 0]
    assert method.route(test, knob=0.0).final[0] in (0, 2) and method.route(test, knob=0.0).final[1] in (1, 2)


def test_mf_on_an_unseen_pool_fits_the_new_columns_on_the_probe():
    score, prompts = topics(60)
    train = pool(score, prompts, cost=[0.1, 0.1, 0.1])
    probe = pool([[r[1], r[0]] for r in score[:30]], prompts[:30], cost=[0.1, 0.1])
    test = pool([[0, 1], [1, 0]], ["math question new", "code question new"], cost=[0.1, 0.1])
    method = MfRouter(MfConfig(dim=8, epochs=300, lr=0.05), embed_fn=topic_embed)
    method.fit(train, seed=0, probe=probe)
    assert method.route(test, knob=0.0).final == [1, 0]


def cascade_pool(n: int, offset: int = 0):
    """m0 is right on half the items, and says "good" exactly then; m2 is always right."""
    score = [[1, 0, 1] if k % 2 == 0 else [0, 0, 1] for k in range(n)]
    responses = [["good answer" if k % 2 == 0 else "unsure", "meh", "fine"] for k in range(n)]
    prompts = [f"question {k + offset}" for k in range(n)]
    return pool(score, prompts, responses, cost=[0.1, 0.5, 2.0])


def test_pareto_chain_keeps_the_cheap_to_strong_front():
    # m1 costs more than m0 and is less accurate: off the front
    assert pareto_chain(np.array([0.5, 0.4, 0.9]), np.array([0.1, 0.5, 2.0]), max_chain=4) == [0, 2]
    assert pareto_chain(np.array([0.1, 0.2, 0.3, 0.4, 0.5]), np.arange(1.0, 6.0), max_chain=3) == [0, 2, 4]


def test_cascade_stops_on_a_reliable_cheap_answer_and_escalates_otherwise():
    method = CascadeRouter(CascadeConfig(c=10.0), embed_fn=topic_embed)
    method.fit(cascade_pool(40), seed=0)
    assert method.chain == [0, 2]
    test = cascade_pool(4, offset=100)
    routes = method.route(test, knob=0.5)
    assert routes.executed == [(0,), (0, 2), (0,), (0, 2)]
    assert routes.final == [0, 2, 0, 2]
    assert method.route(test, knob=0.0).executed == [(0,)] * 4  # τ = 0: the first stage always
    assert method.route(test, knob=1.01).executed == [(0, 2)] * 4  # τ > 1: the whole chain


def test_cascade_skips_a_stage_not_recorded_on_the_item():
    method = CascadeRouter(CascadeConfig(c=10.0), embed_fn=topic_embed)
    method.fit(cascade_pool(40), seed=0)
    test = cascade_pool(2, offset=100)
    test.score[0, 0] = NAN
    assert method.route(test, knob=0.5).executed[0] == (2,)


def test_fixed_primitive_needs_the_primitive():
    plain = pool([[1, 1, 1]])
    with pytest.raises(NotApplicable, match="self_consistency/cot"):
        FixedPrimitiveRouter().fit(plain, seed=0)
    pairs = [("m", "direct"), ("m", "self_consistency"), ("n", "cot")]
    t = table([[1, 1, 0], [1, 1, 0]], [[0.1, 0.5, 0.2]] * 2, pairs=pairs)
    method = FixedPrimitiveRouter()
    method.fit(t, seed=0)
    assert method.route(t).final == [1, 1]


def test_always_decompose_is_not_applicable_on_tables():
    with pytest.raises(NotApplicable, match="composite"):
        AlwaysDecompose().fit(pool([[1, 1, 1]]), seed=0)


@pytest.mark.parametrize("name", sorted(set(BASELINES) - {"always_decompose", "self_consistency"}))
def test_no_baseline_routes_to_a_masked_pair(name):
    rng = np.random.default_rng(1)
    score = (rng.random((30, 3)) < 0.5).astype(float)
    prompts = [f"{'math' if k % 2 else 'code'} {k}" for k in range(30)]
    responses = [["good", "x", "y"]] * 30
    train = pool(score.tolist(), prompts, responses)
    masked = score.copy()
    masked[rng.random((30, 3)) < 0.5] = NAN
    masked[:, 1] = np.where(np.isnan(masked).all(axis=1), 1.0, masked[:, 1])
    test = pool(masked.tolist(), prompts, responses)
    method = BASELINES[name]()
    if hasattr(method, "embed_fn"):
        method.embed_fn = topic_embed
    method.fit(train, seed=0)
    available = test.available()
    for knob in method.knobs or (None,):
        routes = method.route(test, knob=knob)
        for i, calls in enumerate(routes.executed):
            assert all(available[i, j] for j in calls), (knob, i, calls)


def test_zero_router_walks_the_train_hull_with_mixes_of_neighbours():
    from orchestrator.baselines import ZeroRouter

    # on train m0 (.1, .5), m1 (.5, .5) under the hull, m2 (2, 1): the hull is m0 then m2
    train = pool([[1, 1, 1], [0, 0, 1]])
    test = pool([[1, 1, 1]] * 400)
    method = ZeroRouter()
    method.fit(train, seed=0)
    assert method.knobs == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert set(method.route(test, knob=0.0).final) == {0}
    assert set(method.route(test, knob=1.0).final) == {2}
    half = method.route(test, knob=0.5).final
    assert set(half) == {0, 2} and 150 < half.count(2) < 250
    # the dear share only grows along the knobs, item by item
    quarter = method.route(test, knob=0.25).final
    assert all(q == 0 or h == 2 for q, h in zip(quarter, half, strict=True))
    # on an unseen pool the probe decides: there m1 is as good as m2 and cheaper
    probe = pool([[0, 1, 1], [0, 1, 1]])
    method.fit(train, seed=0, probe=probe)
    assert set(method.route(test, knob=method.knobs[-1]).final) == {1}
