"""The learned policy's agreement cascade: its calls on hand-made cases, its gate, and its routes."""

from __future__ import annotations

import numpy as np

from orchestrator.learning.cascade import CascadePlan, fit_gate, run_cascade
from orchestrator.learning.method import LearnedMethod
from orchestrator.routing.methods import CASCADE_OFFSET, knob_label
from tests.orchestrator.synthetic_outcomes import lookup_embedder, synthetic_table
from tests.orchestrator.test_learning_train import TINY

# Pairs: 0 = strong and dear, 1 and 2 = cheap.
ANSWERS = {
    (0, 0): "A",
    (0, 1): "A",
    (0, 2): "A",  # item 0: the cheap pairs agree
    (1, 0): "A",
    (1, 1): "B",
    (1, 2): "A",  # item 1: they disagree, escalate to pair 0
    (2, 0): "A",
    (2, 1): None,
    (2, 2): "A",  # item 2: the first answer cannot be compared, escalate with no second opinion
}


def _plan(ranked: list[list[int]], escalate: list[int], estimate: list[int] | None = None) -> CascadePlan:
    """Escalation 0 is `escalate`, escalation 1 (highest estimated accuracy) `estimate` (default the same)."""
    return CascadePlan(np.array(ranked), np.stack([escalate, estimate if estimate is not None else escalate], axis=1))


def test_agreement_keeps_the_first_answer_and_disagreement_escalates() -> None:
    plan = _plan([[1, 2, 0, -1]] * 4, [0, 0, 0, 0])
    answer = {**ANSWERS, (3, 1): "B", (3, 2): "A"}
    executed, final = run_cascade(plan, [(1, 0), (1, 0), (1, 0), (0, 0)], lambda i, j: answer[(i, j)])
    assert executed == [(1, 2), (1, 2, 0), (1, 0), (1,)]
    assert final == [1, 0, 0, 1]  # the item without a cascade calls its first pair only


def test_the_second_opinion_is_the_ranked_pair_asked_for() -> None:
    plan = _plan([[1, 0, 2, -1]], [0])
    executed, final = run_cascade(plan, [(2, 0)], lambda i, j: ANSWERS[(0, j)])
    assert executed == [(1, 2)] and final == [1]  # rank 2 is pair 2, which agrees


def test_the_escalation_asked_for_is_called_on_disagreement() -> None:
    plan = _plan([[1, 2, -1, -1]] * 2, [1, 1], estimate=[0, 0])  # at λ = 0 the policy keeps pair 1
    answer = {(i, j): "AB"[j == 2] for i in range(2) for j in range(3)}
    executed, final = run_cascade(plan, [(1, 0), (1, 1)], lambda i, j: answer[(i, j)])
    assert executed == [(1,), (1, 2, 0)]  # escalation 0 is the first pair itself: no cascade
    assert final == [1, 0]


def test_no_second_call_when_escalation_is_the_first_pair_or_none_is_left() -> None:
    plan = _plan([[0, 1, -1, -1], [1, -1, -1, -1], [1, 2, -1, -1]], [0, 0, 2])
    executed, final = run_cascade(plan, [(1, 0)] * 3, lambda i, j: ANSWERS[(1, j)])
    assert executed == [(0,), (1,), (1, 2)]  # item 2 escalates to the second opinion: no third call
    assert final == [0, 1, 2]


def test_the_gate_opens_only_where_the_cascade_pays_on_training_items() -> None:
    # Groups (benchmarks, here) "mc": the cheap pair 1 is wrong on half the items, and pair 2 disagrees exactly there.
    # Domain "code": the cheap pairs are always right, but answers never compare, so the
    # cascade escalates every item and pays for nothing.
    n = 40
    domains = ["mc"] * 20 + ["code"] * 20
    score = np.zeros((n, 3))
    score[:, 0] = 1.0
    score[:, 1] = np.where(np.asarray(domains) == "mc", np.tile([1.0, 0.0], n // 2), 1.0)
    score[:, 2] = score[:, 1]
    cost = np.tile([1.0, 0.02, 0.02], (n, 1))

    def answer(i: int, j: int) -> str | None:
        if domains[i] == "code":
            return None
        return "A" if score[i, j] else ("B" if j == 1 else "C")

    plan = _plan([[1, 2, 0, -1]] * n, [0] * n)
    assert fit_gate(plan, domains, score, cost, answer, lam=0.1) == {"mc": (1, 0)}
    assert fit_gate(plan, domains, score, cost, answer, lam=5.0) == {}  # escalation too dear


def test_learned_method_offers_cascade_points_that_route_only_available_pairs() -> None:
    table, emb = synthetic_table(n=200, seed=3)
    train, test = table.rows(np.arange(160)), table.rows(np.arange(160, 200))
    method = LearnedMethod({**TINY, "cascade_knobs": [0.05, 0.5]}, embedder=lookup_embedder(table, emb))
    assert method.knobs[-2:] == (CASCADE_OFFSET + 0.05, CASCADE_OFFSET + 0.5)
    method.fit(train, seed=0)
    available = test.available()
    for knob in method.knobs[-2:]:
        routes = method.route(test, knob=knob)
        for i, (calls, last) in enumerate(zip(routes.executed, routes.final, strict=True)):
            assert 1 <= len(calls) <= 3 and len(set(calls)) == len(calls)
            assert all(available[i, j] for j in calls) and last in calls


def test_knob_labels_name_the_cascade() -> None:
    assert knob_label(0.05) == "λ=0.05"
    assert knob_label(CASCADE_OFFSET + 0.05) == "λ=0.05+cascade"
