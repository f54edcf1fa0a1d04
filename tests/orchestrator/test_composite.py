"""Composite tasks from recorded items: how they are drawn, and what each plan scores and costs."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from orchestrator.baselines.knn import KnnConfig, KnnRouter
from orchestrator.composite import (
    Composite,
    CompositeConfig,
    CompositeCosting,
    Decompose,
    Delegate,
    build_composites,
    build_split,
)
from orchestrator.composite.baselines import COMPOSITE_METHODS, DecideRoute, DecomposeRoute
from orchestrator.composite.build import MIXED_DOMAIN, SAME_DOMAIN, text_of
from orchestrator.composite.outcome import planner_price
from orchestrator.outcomes import estimate_tokens
from orchestrator.planner import plan_messages
from tests.orchestrator.synthetic import table, topic_embed

PRICE = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
NAN = float("nan")


def mixed_table(n: int = 80):
    """m0 cheap, right on math only; m1 cheap, right on code only; m2 dear, right on both.
    Two sources (the second has no m2), half the items of each in the test split."""
    score = [[1.0, 0.0, 1.0] if k % 2 == 0 else [0.0, 1.0, 1.0] for k in range(n)]
    cost = [[0.1, 0.1, 2.0] for _ in range(n)]
    for k in range(n // 2, n):
        score[k][2], cost[k][2] = NAN, NAN
    base = table(score, cost, prompts=[f"math problem {k}" if k % 2 == 0 else f"code task {k}" for k in range(n)])
    return dataclasses.replace(
        base,
        domains=["math" if k % 2 == 0 else "code" for k in range(n)],
        sources=["a" if k < n // 2 else "b" for k in range(n)],
        splits=["test" if k % 4 in (0, 1) else "train" for k in range(n)],
    )


def test_a_split_never_puts_a_test_item_in_a_train_composite() -> None:
    t = mixed_table()
    train, test = build_split(t, train_count=50, test_count=50, seed=3)
    train_leaves = {leaf for c in train for leaf in c.leaves()}
    test_leaves = {leaf for c in test for leaf in c.leaves()}
    assert train_leaves and test_leaves and not train_leaves & test_leaves
    assert all(t.splits[i] == "test" for i in test_leaves)


def test_composites_have_the_kinds_asked_for() -> None:
    t = mixed_table()
    config = CompositeConfig(min_parts=2, max_parts=4, mixed_share=0.5, cross_source_share=0.3, nested_share=0.4)
    made = build_composites(t, range(t.n_items), count=200, seed=1, config=config)
    for c in made:
        leaves = c.leaves()
        assert len(set(leaves)) == len(leaves)  # never one item twice
        assert 2 <= len(c.parts) <= 4
        domains, sources = {t.domains[i] for i in leaves}, {t.sources[i] for i in leaves}
        assert (c.kind == SAME_DOMAIN) == (len(domains) == 1)
        assert c.cross_source == (len(sources) > 1)
    kinds = [c.kind for c in made]
    assert 0.3 < kinds.count(MIXED_DOMAIN) / len(made) < 0.7
    assert 0.15 < sum(c.cross_source for c in made) / len(made) < 0.45
    nested = [c for c in made if c.depth == 2]
    assert 0.25 < len(nested) / len(made) < 0.55
    inner = [p for c in nested for p in c.parts if isinstance(p, Composite)]
    assert all(2 <= len(p.parts) <= 3 and p.depth == 1 for p in inner)
    assert [c.leaves() for c in build_composites(t, range(t.n_items), count=30, seed=1, config=config)] == [
        c.leaves() for c in build_composites(t, range(t.n_items), count=30, seed=1, config=config)
    ]


def test_too_few_items_fail_clearly() -> None:
    with pytest.raises(ValueError, match="cannot make a composite"):
        build_composites(mixed_table(), [0], count=1, seed=0)
    with pytest.raises(ValueError, match="max_parts"):
        CompositeConfig(min_parts=4, max_parts=3)


def test_delegating_sums_the_parts_costs_and_means_their_scores_less_the_penalty() -> None:
    t = mixed_table()
    c = Composite("c", (0, 1, 2), MIXED_DOMAIN, False)  # math, code, math; all recorded on m2
    plain = CompositeCosting(t, planner_price=PRICE).outcome(c, Delegate(0))
    assert plain.score == pytest.approx(2 / 3) and plain.cost == pytest.approx(0.3)
    assert (plain.calls, plain.violations, plain.decomposed) == (1, 0, False)
    penalized = CompositeCosting(t, planner_price=PRICE, penalty=0.1).outcome(c, Delegate(2))
    assert penalized.score == pytest.approx(0.8)  # each part keeps 1 - 0.1 * 2
    assert penalized.cost == pytest.approx(6.0)


def test_a_pair_not_recorded_on_every_part_cannot_be_delegated_to() -> None:
    t = mixed_table()
    c = Composite("c", (0, 60), MIXED_DOMAIN, True)  # item 60 has no m2
    out = CompositeCosting(t, planner_price=PRICE).outcome(c, Delegate(2))
    assert out.score == 0.0 and out.violations == 2
    score, _, ok = CompositeCosting(t, planner_price=PRICE).delegate_matrix([c])
    assert ok.tolist() == [[True, True, False]]


def test_decomposing_pays_the_planner_then_each_part() -> None:
    t = mixed_table()
    inner = Composite("c.2", (1, 3), SAME_DOMAIN, False)
    c = Composite("c", (0, inner), MIXED_DOMAIN, False)
    costing = CompositeCosting(t, planner_price=PRICE)
    out = costing.outcome(c, Decompose((0, Decompose((1, 1)))))
    assert out.score == 1.0 and out.calls == 5 and out.decomposed  # two planner calls, three parts
    assert out.cost == pytest.approx(costing.planner_cost(c) + costing.planner_cost(inner) + 0.3)
    prompt = sum(estimate_tokens(m["content"]) for m in plan_messages(text_of(inner, t)))
    assert costing.planner_cost(inner) > prompt * PRICE["input_per_mtok"] / 1e6 > 0
    # a nested part delegated: one call for both its items
    assert costing.outcome(c, Decompose((0, Delegate(1)))).calls == 3
    with pytest.raises(ValueError, match="is a composite"):
        costing.outcome(c, Decompose((0, 1)))


def test_planner_is_the_cheapest_priced_model_unless_named() -> None:
    t = mixed_table()
    prices = {
        "m0": {"input_per_mtok": 0.5, "output_per_mtok": 0.5},
        "m2": {"input_per_mtok": 0.1, "output_per_mtok": 0.1},
    }
    assert planner_price(prices, None, t)[0] == "m2"
    assert planner_price(prices, "m0", t)[0] == "m0"
    with pytest.raises(ValueError, match="no price"):
        planner_price(prices, "m1", t)


def test_routing_each_part_beats_one_dear_pair_where_the_parts_want_different_models() -> None:
    t = mixed_table()
    train, test = build_split(t, train_count=80, test_count=60, seed=0, config=CompositeConfig(cross_source_share=0.0))
    train_rows = sorted({leaf for c in train for leaf in c.leaves()})
    costing = CompositeCosting(t, planner_price={"input_per_mtok": 0.0, "output_per_mtok": 0.0})
    knn = DecomposeRoute("decompose_knn", lambda: KnnRouter(KnnConfig(k=3), embed_fn=topic_embed))
    delegate = COMPOSITE_METHODS["always_delegate"]()
    for method in (knn, delegate):
        method.fit(costing, train_rows, train, seed=0)
    routed = [costing.outcome(c, p) for c, p in zip(test, knn.plans(test, knob=0.5), strict=True)]
    assert np.mean([o.score for o in routed]) == 1.0  # math to m0, code to m1
    assert np.mean([o.cost for o in routed]) < 1.0
    one_call = [costing.outcome(c, p) for c, p in zip(test, delegate.plans(test, knob=0.5), strict=True)]
    assert np.mean([o.score for o in one_call]) < 0.9  # no cheap pair is right on both kinds of part


def mixed_files(folder, n: int = 40, m2=lambda k: 1.0):
    """(outcome file, prices.json) of `n` math and code items as `mixed_table` has them; m2's
    score on item k is `m2(k)`."""
    from tests.orchestrator.synthetic import record, write

    records = [
        record(f"{k}", model, score, 0.1 if model != "m2" else 2.0, domain="math" if k % 2 == 0 else "code",
               split="test" if k % 4 in (0, 1) else "train", prompt=f"{'math' if k % 2 == 0 else 'code'} task {k}")
        for k in range(n)
        for model, score in (("m0", float(k % 2 == 0)), ("m1", float(k % 2 == 1)), ("m2", m2(k)))
    ]  # fmt: skip
    prices = folder / "prices.json"
    prices.write_text(json.dumps({"m0": {"input_per_mtok": 0.1, "output_per_mtok": 0.1}}))
    return write(folder / "synth.jsonl", records), prices


def test_the_evaluation_prints_its_assumptions_and_a_sensitivity_table(tmp_path, capsys) -> None:
    from orchestrator.evaluate_composite import main

    path, prices = mixed_files(tmp_path)
    out = tmp_path / "out.json"
    argv = ["--outcomes", str(path), "--prices", str(prices), "--seeds", "0,1", "--train-count", "40",
            "--test-count", "30", "--methods", "always_delegate,always_decompose", "--sensitivity", "0,0.2",
            "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Assumptions: a delegated call scores each part")
    assert "| always_delegate |" in printed and "| 0.2 |" in printed
    saved = json.loads(out.read_text())
    delegate = [s["penalties"]["0.2"]["methods"]["always_delegate"]["aiq"] for s in saved["seeds"]]
    plain = [s["penalties"]["0.0"]["methods"]["always_delegate"]["aiq"] for s in saved["seeds"]]
    assert all(d < p for d, p in zip(delegate, plain, strict=True))  # the penalty only ever costs delegation


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--methods", "nope"], "unknown method(s) nope"),
        (["--sensitivity", "0,x"], "--sensitivity takes comma-separated numbers"),
        (["--penalty", "2"], "within [0, 1]"),
        (["--outcomes", "missing.jsonl"], "no such file: missing.jsonl"),
    ],
)
def test_bad_arguments_fail_in_one_line(argv, message, capsys) -> None:
    from orchestrator.evaluate_composite import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_deciding_by_estimates_splits_mixed_composites_and_delegates_same_domain_ones() -> None:
    t = mixed_table()
    config = CompositeConfig(cross_source_share=0.0, nested_share=0.0)
    train, test = build_split(t, train_count=80, test_count=80, seed=2, config=config)
    train_rows = sorted({leaf for c in train for leaf in c.leaves()})
    costing = CompositeCosting(t, planner_price=PRICE)
    decide = DecideRoute("decide_knn", lambda: KnnRouter(KnnConfig(k=3), embed_fn=topic_embed))
    decide.fit(costing, train_rows, train, seed=0)
    plans = decide.plans(test, knob=0.5)
    split = {kind: [isinstance(p, Decompose) for p, c in zip(plans, test, strict=True) if c.kind == kind]
             for kind in (SAME_DOMAIN, MIXED_DOMAIN)}  # fmt: skip
    assert split[SAME_DOMAIN] and not any(split[SAME_DOMAIN])  # one cheap pair is right on every part
    mixed_b = [isinstance(p, Decompose) for p, c in zip(plans, test, strict=True)
               if c.kind == MIXED_DOMAIN and t.sources[c.leaves()[0]] == "b"]  # fmt: skip
    assert mixed_b and all(mixed_b)  # no pair of source b is right on both kinds: split
    outcomes = [costing.outcome(c, p) for c, p in zip(test, plans, strict=True)]
    assert np.mean([o.score for o in outcomes]) == 1.0
    # with a heavy interference penalty every composite of two parts or more is split
    heavy = CompositeCosting(t, planner_price=PRICE, penalty=0.6)
    decide.fit(heavy, train_rows, train, seed=0)
    assert all(isinstance(p, Decompose) for p in decide.plans(test, knob=0.5))


def test_a_cascade_pays_for_every_call_it_makes() -> None:
    from orchestrator.composite.outcome import Solve

    t = mixed_table()
    costing = CompositeCosting(t, planner_price=PRICE)
    c = Composite("c", (0, 1), MIXED_DOMAIN, False)
    once = costing.outcome(c, Decompose((Solve(0), Solve(1))))
    twice = costing.outcome(c, Decompose((Solve(0, tried=(1,)), 1)))
    assert once.score == twice.score == 1.0
    assert twice.cost == pytest.approx(once.cost + t.cost[0, 1]) and twice.calls == once.calls + 1
    delegated = costing.outcome(c, Delegate(2, tried=(0,)))
    assert delegated.score == 1.0 and delegated.cost == pytest.approx(t.cost[[0, 1]][:, [0, 2]].sum())


def test_a_node_that_took_no_answer_scores_nothing_and_pays_its_calls() -> None:
    from orchestrator.composite.outcome import Solve

    t = mixed_table()
    costing = CompositeCosting(t, planner_price=PRICE)
    c = Composite("c", (0, 1), MIXED_DOMAIN, False)
    failed = costing.outcome(c, Decompose((Solve(-1, tried=(0,)), Solve(1))))
    assert failed.score == 0.5 and failed.violations == 0
    assert failed.cost == pytest.approx(costing.planner_cost(c) + t.cost[0, 0] + t.cost[1, 1])
    none = costing.outcome(c, Delegate(-1, tried=(2,)))
    assert none.score == 0.0 and none.cost == pytest.approx(t.cost[[0, 1], 2].sum()) and none.calls == 1


def test_a_report_of_one_domain_says_so_in_valid_json(tmp_path, capsys) -> None:
    """No mixed-domain composite: its rates are absent (null, a dash), never NaN, which
    Postgres's jsonb and the browser's JSON.parse both refuse."""
    from orchestrator.evaluate_composite import main
    from tests.orchestrator.synthetic import record, write

    records = [
        record(f"{k}", model, score, 0.1 if model == "m0" else 1.0, domain="math", split="test" if k % 2 else "train",
               prompt=f"math task {k}")
        for k in range(40)
        for model, score in (("m0", float(k % 3 == 0)), ("m1", 1.0))
    ]  # fmt: skip
    path = write(tmp_path / "one.jsonl", records)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m0": {"input_per_mtok": 0.1, "output_per_mtok": 0.1}}))
    out = tmp_path / "out.json"
    argv = ["--outcomes", str(path), "--prices", str(prices), "--seeds", "0", "--train-count", "20",
            "--test-count", "10", "--methods", "decide_mf", "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    assert "| decide_mf | 0." in capsys.readouterr().out

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} in the report")

    report = json.loads(out.read_text(), parse_constant=refuse)
    assert all(same is not None and mixed is None for same, mixed in report["summary"]["rates"]["decide_mf"].values())
