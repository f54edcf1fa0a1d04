"""The learned policy on composites: it learns when to split, and the core decides as it does."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from orchestrator.composite import CompositeConfig, CompositeCosting, Decompose, Delegate, build_split
from orchestrator.composite.build import MIXED_DOMAIN, SAME_DOMAIN
from orchestrator.composite.learned import LearnedComposite
from tests.orchestrator.synthetic import topic_embed
from tests.orchestrator.test_composite import mixed_table

SMALL = {
    "policy": {"hidden": 16},
    "sft": {"reliability_epochs": 2, "epochs": 6, "batch_size": 16},
    "rl": {"iterations": 4, "tasks_per_iteration": 16, "group": 4},
    "knobs": [0.0, 0.1, 0.5],
    "cascade_knobs": [],
    "decompose": {"epochs": 300, "rl_iterations": 20},
}
PLANNER = {"input_per_mtok": 20.0, "output_per_mtok": 20.0}


@pytest.fixture(scope="module")
def fitted() -> tuple[LearnedComposite, CompositeCosting, list, list, list[int]]:
    torch.set_num_threads(1)
    t = mixed_table(160)
    config = CompositeConfig(cross_source_share=0.0, nested_share=0.3)
    train, test = build_split(t, train_count=160, test_count=80, seed=2, config=config)
    rows = sorted({leaf for c in train for leaf in c.leaves()})
    costing = CompositeCosting(t, planner_price=PLANNER)
    learned = LearnedComposite(SMALL, embedder=topic_embed)
    learned.fit(costing, rows, train, seed=0)
    return learned, costing, train, test, rows


def _split_rates(plans, test) -> dict[str, float]:
    return {
        kind: float(np.mean([isinstance(p, Decompose) for p, c in zip(plans, test, strict=True) if c.kind == kind]))
        for kind in (SAME_DOMAIN, MIXED_DOMAIN)
    }


def test_learns_to_split_mixed_composites_and_delegate_same_domain_ones(fitted) -> None:
    learned, costing, _, test, _ = fitted
    # The head was fit on decisions of both signs, then played whole episodes.
    assert 0.0 < learned.metrics["decompose/positive_share"] < 1.0
    assert learned.metrics["decompose/agreement"] > 0.9
    assert learned.metrics["decompose_rl/violations"] == 0
    assert "loss/decompose_pg" in learned.metrics
    for knob in (0.1, 0.5):
        plans = learned.plans(test, knob=knob)
        rates = _split_rates(plans, test)
        assert rates[SAME_DOMAIN] < 0.35  # one cheap pair is right on every part: one call
        assert rates[MIXED_DOMAIN] > 0.9  # no cheap pair is right on both kinds: split
        outcomes = [costing.outcome(c, p) for c, p in zip(test, plans, strict=True)]
        assert np.mean([o.score for o in outcomes]) > 0.95 and not any(o.violations for o in outcomes)
        # Delegated same-domain composites went to the cheap pair that is right on their kind.
        delegated = [(c, p) for c, p in zip(test, plans, strict=True) if isinstance(p, Delegate)]
        assert delegated and all(p.col in (0, 1) for _, p in delegated)


def test_a_second_penalty_refits_the_head_only(fitted) -> None:
    learned, costing, train, test, rows = fitted
    before = {k: v.clone() for k, v in learned.method.net.state_dict().items()}
    heavy = CompositeCosting(costing.table, planner_price=PLANNER, penalty=0.6)
    learned.fit(heavy, rows, train, seed=0)
    after = learned.method.net.state_dict()
    assert all(torch.equal(v, after[k]) for k, v in before.items() if "decompose_head" not in k)
    assert not all(torch.equal(v, after[k]) for k, v in before.items() if "decompose_head" in k)
    # With a heavy interference penalty, delegating any composite loses: nearly all split.
    assert np.mean([isinstance(p, Decompose) for p in learned.plans(test, knob=0.5)]) > 0.9
    learned.fit(costing, rows, train, seed=0)  # back to the module's fit for the other tests


@pytest.mark.parametrize("knob", [0.0, 0.1, 0.5])
def test_the_core_engine_carries_out_the_plans_the_batched_choices_make(fitted, knob: float) -> None:
    """Each composite as a run of the runtime policy through the orchestration core (what a
    live run decides) gives the plan the evaluation's batched choices give."""
    learned, _, _, test, _ = fitted
    batched = learned.plans(test, knob=knob)
    core = learned.runs(test, knob=knob)
    assert core == batched
    assert any(isinstance(p, Delegate) for p in core) and any(isinstance(p, Decompose) for p in core)
    assert any(isinstance(part, Delegate | Decompose) for p in core if isinstance(p, Decompose) for part in p.parts)


def _as_note(plan, table) -> dict:
    """A plan the core carried out, as best-of-N notes the plan it chose (`policies.learned_best_of`)."""
    if isinstance(plan, Delegate):
        assert not plan.tried
        return {"solve": [plan.col + 1, table.pairs[plan.col][1]]}
    parts = []
    for part in plan.parts:
        if isinstance(part, Delegate | Decompose):
            parts.append(_as_note(part, table))
        else:
            assert not part.tried  # the planned pair's answer is the one: no second opinion
            parts.append({"pair": [part.col + 1, table.pairs[part.col][1]]})
    return {"split": parts}


@pytest.mark.parametrize("uniform", [False, True])
def test_best_of_n_at_run_time_scores_whole_plans_and_carries_out_the_chosen_one(
    fitted, tmp_path, monkeypatch, uniform: bool
) -> None:
    """A composite request with best_of = N: N whole plans drawn (decomposed ones among them),
    each scored node by node with OrchRM's Platt-scaled probability less λ·cost, the top one
    carried out part by part; a second run of the same requests decides the same. With the
    parts' pairs drawn uniformly, the chosen plans hold pairs the policy would not pick itself."""
    from orchestrator.composite.build import Composite
    from orchestrator.offline.composite_shell import route_composites
    from orchestrator.policies import learned_best_of
    from orchestrator.reward.model import RewardConfig, RewardNet, save_reward_model

    if uniform:
        real_tree = learned_best_of.tree

        def flat(node: learned_best_of.Node) -> learned_best_of.Node:
            for part in node.parts:
                if isinstance(part, learned_best_of.Node):
                    flat(part)
                else:
                    part.probs = np.full(len(part.refs), 1 / len(part.refs))
            return node

        monkeypatch.setattr(learned_best_of, "tree", lambda *args: flat(real_tree(*args)))

    learned, costing, _, test, _ = fitted
    torch.manual_seed(0)
    path = tmp_path / "orchrm.pt"
    save_reward_model(path, RewardNet(RewardConfig(hidden=8)), learned.method.context, extra={"platt": [3.0, -1.0]})
    policy = learned.method.runtime_policy(0.1, decides_composites=True, reward_model=str(path))
    nested = [c for c in test if any(isinstance(p, Composite) for p in c.parts)]
    composites = nested[:4] + [c for c in test if c not in nested][:8]
    assert len(nested) >= 2
    with torch.no_grad():
        plans, states = route_composites(costing.table, composites, policy, lam=0.1, best_of=6)
        again, _ = route_composites(costing.table, composites, policy, lam=0.1, best_of=6)
    assert again == plans
    kinds = set()
    for plan, state in zip(plans, states, strict=True):
        assert state.status == "succeeded" and state.root is not None
        note = state.root.metadata["best_of"]
        assert note["n"] == 6 and len(note["candidates"]) == 6 and note["scoring_tokens"] == 0
        for candidate in note["candidates"]:
            assert 0.0 <= candidate["right"] <= 1.0 and candidate["lam_cost"] >= 0.0
            assert candidate["score"] == pytest.approx(candidate["right"] - candidate["lam_cost"])
            kinds.add(candidate["decomposed"])
        assert note["chosen"] == int(np.argmax([c["score"] for c in note["candidates"]]))
        assert _as_note(plan, costing.table) == note["candidates"][note["chosen"]]["plan"]
    assert kinds == {True, False}  # whole and decomposed plans were both candidates
    # Without best-of-N the same policy decides by its head alone: no note.
    with torch.no_grad():
        own, plain = route_composites(costing.table, composites, policy, lam=0.1)
    assert all(s.root is not None and "best_of" not in s.root.metadata for s in plain)
    if uniform:
        assert own != plans
    # best_of_cost weighs the estimated cost in place of λ: 0 picks the likeliest plan to be
    # right, a large weight the cheapest one.
    for weight in (0.0, 1e4):
        weighed = learned.method.runtime_policy(
            0.1, decides_composites=True, reward_model=str(path), best_of_cost=weight
        )
        with torch.no_grad():
            _, runs = route_composites(costing.table, composites, weighed, lam=0.1, best_of=6)
        for state in runs:
            assert state.root is not None
            note = state.root.metadata["best_of"]
            assert note["cost_weight"] == weight and note["lam"] == 0.1
            candidates, chosen = note["candidates"], note["candidates"][note["chosen"]]
            if weight == 0:
                assert all(c["lam_cost"] == 0 for c in candidates)
                assert chosen["right"] == max(c["right"] for c in candidates)
            else:
                assert chosen["lam_cost"] == min(c["lam_cost"] for c in candidates) > 0


def test_the_evaluation_reports_the_learned_policys_rates_and_decisions(tmp_path, capsys) -> None:
    import json

    from orchestrator.evaluate_composite import main
    from tests.orchestrator.test_composite import mixed_files

    path, prices = mixed_files(tmp_path)
    config = tmp_path / "small.json"
    config.write_text(json.dumps({**SMALL, "decompose": {"epochs": 20, "rl_iterations": 2}}))
    argv = ["--outcomes", str(path), "--prices", str(prices), "--seeds", "0", "--train-count", "30",
            "--test-count", "20", "--methods", "decide_mf,learned", "--learned-config", str(config),
            "--json", str(tmp_path / "out.json")]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "| learned |" in printed and "Decompose rate by λ" in printed
    assert "learned: its decisions on test composites take the option worth more" in printed
    assert "learned with its head off (every composite split" in printed
    report = json.loads((tmp_path / "out.json").read_text())
    summary = report["summary"]
    assert report["kind"] == "composites" and set(summary["methods"]) == {"decide_mf", "learned"}
    assert summary["methods"]["learned"]["aiq"] == [report["seeds"][0]["penalties"]["0.0"]["methods"]["learned"]["aiq"]]
    assert set(summary["rates"]) == {"decide_mf", "learned"} and len(summary["rates"]["learned"]["0.1"]) == 2
    assert set(summary["decisions"]) == {"0", "0.1", "1"} and set(summary["sensitivity"]) == {"0"}
    assert len(summary["head_off"]["aiq"]) == 1 and 0 <= summary["head_off"]["aiq_mean"] <= 1
    saved = report["seeds"][0]["penalties"]["0.0"]["methods"]["learned"]
    assert set(saved["decisions"]) == {"0.0", "0.1", "1.0"} and "decompose/agreement" in saved["fit"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"decompose": {"epochs": 0, "nope": 1}}))
    with pytest.raises(SystemExit) as exit_:
        main([*argv[:-2], "--learned-config", str(bad)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "decompose.nope: not a known option" in err and "decompose.epochs" in err


def test_train_policy_with_composites_makes_a_checkpoint_that_decides_them_live(tmp_path) -> None:
    import json
    from dataclasses import replace

    from orchestrator.composite.build import build_composites, text_of
    from orchestrator.composite.items import items_of
    from orchestrator.core.state import RunSpec
    from orchestrator.learning.method import LearnedConfig
    from orchestrator.offline.shell import run_offline, table_executor, table_pairs
    from orchestrator.policies import make_policy
    from orchestrator.policies.learned import LearnedPolicy
    from orchestrator.policies.learned_loading import load_policy
    from orchestrator.train_policy import train_table

    t = replace(mixed_table(80), splits=[None] * 80)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m0": {"input_per_mtok": 0.1, "output_per_mtok": 0.1}}))
    config = LearnedConfig.from_mapping({**SMALL, "decompose": {"composites": 160, "epochs": 300, "rl_iterations": 5}})
    with_head, without = tmp_path / "with.pt", tmp_path / "without.pt"
    metrics = train_table(t, out=with_head, seed=0, config=config, prices=prices, embedder=topic_embed,
                          show_progress=False)  # fmt: skip
    assert metrics["decompose/decisions"] > 0 and "loss/decompose_pg" in metrics
    plain = replace(config, decompose=replace(config.decompose, composites=0))
    train_table(t, out=without, seed=0, config=plain, prices=prices, embedder=topic_embed, show_progress=False)
    assert load_policy(with_head).decides_composites and not load_policy(without).decides_composites
    # Served through the core as a live run is: composites split or solved whole, each item scored.
    composites = build_composites(t, range(t.n_items), count=12, seed=5)
    whole = 0
    for c in composites:
        spec = RunSpec(
            task_text=text_of(c, t), policy="learned", decomposable=True, cost_preference=0.5,
            task_metadata={"items": items_of(c, t)},
        )  # fmt: skip
        policy = make_policy("learned", {"checkpoint": str(with_head), "embedder": topic_embed})
        assert isinstance(policy, LearnedPolicy)
        state = run_offline(spec, policy, table_pairs(t), table_executor(t))
        assert state.status == "succeeded", state.end_reason
        assert state.verification["method"] == "composite" and state.verification["items"] == len(c.leaves())
        whole += not state.parts(state.root)  # type: ignore[arg-type]
    assert 0 < whole < len(composites)  # the head decided both ways
