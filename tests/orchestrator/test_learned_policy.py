"""The learned runtime policy: trained by train_policy, it returns admissible, well-formed actions."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from orchestrator.core.protocol import (
    Accept,
    AttemptView,
    Budget,
    Decompose,
    NodeView,
    Observation,
    Pair,
    PairRef,
    Repair,
    Solve,
    check_action,
)
from orchestrator.learning import episode
from orchestrator.learning.context_io import context_from_payload, context_payload
from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.episode import BEST_FROM_ITEMS, BEST_UPTO, CEILING_FROM, binds_best, preset_bound
from orchestrator.learning.features import domain_indices
from orchestrator.learning.method import LearnedConfig, route_batch
from orchestrator.learning.model import PolicyConfig, PolicyNet, load_checkpoint, save_checkpoint
from orchestrator.outcomes import write_outcomes
from orchestrator.policies import COST_PRESETS, make_policy
from orchestrator.policies.learned import LearnedPolicy
from orchestrator.train_policy import train
from tests.orchestrator.synthetic_outcomes import PAIRS, lookup_embedder, outcome_records, synthetic_table

Checkpoint = tuple[Path, dict[str, np.ndarray]]  # the checkpoint's path and the prompts' vectors
TINY = {
    "policy": {"hidden": 32},
    "sft": {"reliability_epochs": 8, "epochs": 10, "batch_size": 32},
    "rl": {"iterations": 10, "tasks_per_iteration": 32, "group": 4},
    "threads": 1,
}
# Admissible pairs as the engine shows them: the synthetic pool's models behind replay endpoints.
DEAR, MID, CHEAP = PairRef(1, "direct"), PairRef(2, "direct"), PairRef(3, "direct")
RUNTIME_PAIRS = (
    Pair(DEAR, f"replay/{PAIRS[0][0]}", 10.0, 30.0),
    Pair(MID, f"replay/{PAIRS[1][0]}", 0.9, 0.9),
    Pair(CHEAP, f"replay/{PAIRS[2][0]}", 0.2, 0.2),
    Pair(PairRef(1, "plan"), f"replay/{PAIRS[0][0]}", 10.0, 30.0),
)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Checkpoint:
    torch.set_num_threads(1)
    table, emb = synthetic_table(n=160, seed=0)
    records = outcome_records(table)
    folder = tmp_path_factory.mktemp("policy")
    outcomes = folder / "synthetic.jsonl.gz"
    write_outcomes(outcomes, records)
    path = folder / "policy.pt"
    stages: set[str] = set()
    live = [{"item_id": "t.4", "calls": [list(PAIRS[2]), list(PAIRS[0])], "score": 1.0, "cost_preference": 0.05}]
    metrics = train(
        [outcomes],
        out=path,
        seed=0,
        config=LearnedConfig.from_mapping(TINY),
        prices=None,
        embedder=lookup_embedder(table, emb),
        show_progress=False,
        on_progress=lambda stage, done, total, _: stages.add(stage),
        extra_trajectories=live,
    )
    assert metrics["eval/reward_rl"] > metrics["eval/reward_untrained"]
    assert stages == {"sft", "rl"} and metrics["data/extra_trajectories"] == 1
    return path, {p: emb[i] for i, p in enumerate(table.prompts)}


def _policy(checkpoint: Checkpoint, **config: object) -> LearnedPolicy:
    path, vectors = checkpoint

    def embed(texts: list[str]) -> np.ndarray:
        return np.stack([vectors[t] for t in texts])

    policy = make_policy("learned", {"checkpoint": str(path), "embedder": embed, **config})
    assert isinstance(policy, LearnedPolicy)
    return policy


def _observe(*nodes: NodeView, text: str, **fields: object) -> Observation:
    base: dict[str, object] = {
        "task_text": text, "decomposable": False, "nodes": nodes, "budget_left": Budget(),
        "pairs": RUNTIME_PAIRS, "domain": "math",
    }  # fmt: skip
    base.update(fields)
    return Observation(**base)  # type: ignore[arg-type]


def _root(text: str, **fields: object) -> NodeView:
    base: dict[str, object] = {"key": "root", "kind": "root", "text": text, "status": "ready", "depth": 0}
    base.update(fields)
    return NodeView(**base)  # type: ignore[arg-type]


def test_solves_with_an_admissible_pair_and_lambda_moves_the_choice(checkpoint: Checkpoint) -> None:
    prices = {DEAR: 40.0, MID: 1.8, CHEAP: 0.4}
    spent = {}
    # A request's own cost preference overrides the preset ("best" asked for at λ = 2).
    for name, preset, lam in (("best", "best", None), ("cheap", "cheap", None), ("override", "best", 2.0)):
        policy = _policy(checkpoint, preset=preset)
        chosen = []
        for i in range(0, 40, 2):
            observation = _observe(_root(f"question {i}"), text=f"question {i}", cost_preference=lam)
            action = check_action(policy.act(observation), observation)
            assert isinstance(action, Solve) and action.pair.primitive == "direct"
            chosen.append(prices[action.pair])
        spent[name] = np.mean(chosen)
    assert spent["cheap"] < spent["best"]
    assert spent["override"] < spent["best"]


def test_repairs_a_failed_attempt_with_another_admissible_pair(checkpoint: Checkpoint) -> None:
    policy = _policy(checkpoint, preset="cheap")
    failed = (AttemptView(CHEAP, "error", error_kind="wrong_answer", cost_usd=1e-4),)
    node = _root("question 3", attempts=failed)
    observation = _observe(node, text="question 3")
    action = check_action(policy.act(observation), observation)
    assert isinstance(action, Repair) and action.pair in {DEAR, MID}


def test_two_endpoints_of_one_model_share_its_column(checkpoint: Checkpoint) -> None:
    """A pool that lists a model twice (its recordings and the live model, or two servers of it):
    the node's admissible one takes the column, and a choice among twins never fails."""
    live = tuple(replace(pair, ref=PairRef(10 + i, "direct"), model=pair.model.removeprefix("replay/"))
                 for i, pair in enumerate(RUNTIME_PAIRS[:3]))  # fmt: skip
    pairs = RUNTIME_PAIRS + live
    policy = _policy(checkpoint, preset="cheap")
    unrecorded = _root("question 5", metadata={"recorded_pairs": []})  # no recording: the live twins
    observation = _observe(unrecorded, text="question 5", pairs=pairs)
    action = check_action(policy.act(observation), observation)
    assert isinstance(action, Solve) and action.pair in {pair.ref for pair in live}
    recorded = _root("question 5", metadata={"recorded_pairs": [list(p) for p in PAIRS]})
    observation = _observe(recorded, text="question 5", pairs=pairs)
    action = check_action(policy.act(observation), observation)
    assert isinstance(action, Solve) and action.pair in {DEAR, MID, CHEAP}
    both = _observe(_root("question 5"), text="question 5", pairs=pairs)  # no lookup: every pair a candidate
    episode = policy.episode(both.nodes[0], both, list(pairs[:3]) + list(live))
    assert {episode.column(pair.ref) for pair in live} == {episode.column(ref) for ref in (DEAR, MID, CHEAP)}


def test_decides_to_delegate_plain_tasks_and_splits_composite_ones(checkpoint: Checkpoint) -> None:
    policy = _policy(checkpoint)
    plain = _observe(_root("question 5"), text="question 5", decomposable=True)
    assert isinstance(check_action(policy.act(plain), plain), Solve)
    items = [{"prompt": "question 6", "item_id": "t.6"}, {"prompt": "question 7", "item_id": "t.7"}]
    composite = _observe(_root("two questions"), text="two", decomposable=True, task_metadata={"items": items})
    assert isinstance(check_action(policy.act(composite), composite), Decompose)


def test_a_live_decision_is_the_evaluations_first_call(checkpoint: Checkpoint) -> None:
    """On items it never saw, the runtime policy calls first the pair that the evaluation's
    episode calls first for the same item, checkpoint and λ: the same features, the same net."""
    path, _ = checkpoint
    table, emb = synthetic_table(n=40, seed=1)
    net, payload = load_checkpoint(path)
    context = context_from_payload(payload["context"])
    batch = encode(table, emb, context, with_outcomes=False)
    pairs = tuple(Pair(PairRef(j + 1, prim), f"replay/{model}") for j, (model, prim) in enumerate(table.pairs))
    for lam in (0.0, 0.05, 1.0):
        routes = route_batch(net, batch, table, lam, max_steps=3)
        policy = make_policy("learned", {"checkpoint": str(path), "embedder": lookup_embedder(table, emb)})
        for i in range(table.n_items):
            text = table.prompts[i]
            observation = _observe(_root(text), text=text, pairs=pairs, domain=table.domains[i], cost_preference=lam)
            action = policy.act(observation)
            assert isinstance(action, Solve)
            assert action.pair.endpoint_id - 1 == routes.executed[i][0], (lam, i)


def test_a_live_episode_is_the_evaluations_episode(tmp_path: Path) -> None:
    """The whole episode, played live against the recorded answers: each answer leaves the
    node answered, the policy asks for a second opinion or accepts one, and the pairs it
    calls, in order, and the answer it accepts are the evaluation's for the same item. The
    network is untrained (seeded): its episodes call one to three pairs, which the trained
    tiny one does not."""
    train_table, train_emb = synthetic_table(n=160, seed=0)
    context = make_context(train_table, train_emb)
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=32)).eval()
    path = tmp_path / "untrained.pt"
    save_checkpoint(path, net, extra={"context": context_payload(context), "train": {"sft": {"max_steps": 3}}})
    table, emb = synthetic_table(n=40, seed=1)
    batch = encode(table, emb, context, with_outcomes=False)
    pairs = tuple(Pair(PairRef(j + 1, prim), f"replay/{model}") for j, (model, prim) in enumerate(table.pairs))
    policy = make_policy("learned", {"checkpoint": str(path), "embedder": lookup_embedder(table, emb)})
    lengths: dict[float, set[int]] = {}
    for lam in (0.0, 0.05, 0.2, 1.0):
        bound = preset_bound(batch, lam)
        routes = route_batch(net, batch, table, lam, max_steps=3)
        for i in range(table.n_items):
            attempts: list[AttemptView] = []
            status = "ready"
            while True:
                node = _root(table.prompts[i], status=status, attempts=tuple(attempts))
                observation = _observe(
                    node, text=table.prompts[i], pairs=pairs, domain=table.domains[i], cost_preference=lam
                )
                action = check_action(policy.act(observation), observation)
                if isinstance(action, Accept):
                    break
                assert isinstance(action, Solve | Repair)
                j = action.pair.endpoint_id - 1
                attempts.append(AttemptView(action.pair, "ok", output=table.responses[i][j], number=len(attempts) + 1))
                status = "answered"
            called = [a.pair.endpoint_id - 1 for a in attempts]
            assert called == list(routes.executed[i]), (lam, i)
            accepted = next(a for a in attempts if a.number == action.attempt)
            assert accepted.pair.endpoint_id - 1 == routes.final[i], (lam, i)
            lengths.setdefault(lam, set()).add(len(called))
            if bound is not None:  # a preset: never past its anchor pair's cost
                assert float(batch.cost_est[i, called].sum()) <= float(bound.cost[i]) * (1 + 1e-6), (lam, i)
    # second and third opinions, not only first answers (a 160-item calibration leaves `best` unbound)
    assert lengths[0.0] | lengths[0.05] == {2, 3}
    assert lengths[1.0] == {1}  # the cheap end's bound holds an item to its anchor pair


def test_the_presets_bind_an_item_to_the_cheapest_and_to_the_most_accurate_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From λ = 1 (the `cheap` preset) an item's episode calls only its cheapest pair, or one as
    cheap (within 1%) and as accurate over the calibration; at λ = 0 (`best`) only the most
    accurate pair over the calibration, where it has `BEST_FROM_ITEMS` items. Between them nothing
    is bound, and without the bound the same network strays from those pairs (issue 47)."""
    train_table, train_emb = synthetic_table(n=BEST_FROM_ITEMS, seed=0)
    context = make_context(train_table, train_emb)
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=32)).eval()
    table, emb = synthetic_table(n=40, seed=1)
    assert COST_PRESETS["cheap"] >= CEILING_FROM > COST_PRESETS["balanced"] > BEST_UPTO >= COST_PRESETS["best"]
    batch = encode(table, emb, context, with_outcomes=False)
    assert preset_bound(batch, COST_PRESETS["balanced"]) is None
    small = replace(batch, calibration_items=BEST_FROM_ITEMS - 1)  # a probe's guess: `best` is not bound
    assert preset_bound(small, COST_PRESETS["best"]) is None and preset_bound(small, COST_PRESETS["cheap"]) is not None
    assert binds_best(BEST_FROM_ITEMS) and not binds_best(BEST_FROM_ITEMS - 1)
    calib = context.calibration
    cost = calib.domain_cost[domain_indices(table.domains)]  # every synthetic item is recorded for every pair
    accuracy = np.broadcast_to(calib.global_acc, cost.shape)
    cheapest = np.array(
        [
            max(np.flatnonzero(row <= row.min() * 1.01), key=lambda j: acc[j])
            for row, acc in zip(cost, accuracy, strict=True)
        ]
    )
    anchors = {1.0: cheapest, 5.0: cheapest, 0.0: accuracy.argmax(axis=1)}
    assert len(set(anchors[0.0].tolist()) | set(cheapest.tolist())) > 1  # two ends, two different pairs

    def called(lam: float) -> list[tuple[int, ...]]:
        batch = encode(table, emb, context, with_outcomes=False)
        return route_batch(net, batch, table, lam, max_steps=3).executed

    for lam, anchor in anchors.items():
        bound = preset_bound(encode(table, emb, context, with_outcomes=False), lam)
        assert bound is not None
        np.testing.assert_allclose(
            bound.cost.numpy(), cost[np.arange(table.n_items), anchor] / calib.cost_ref, rtol=1e-5
        )
        assert called(lam) == [(int(j),) for j in anchor], lam
        monkeypatch.setattr(episode, "CEILING_FROM", float("inf"))
        monkeypatch.setattr(episode, "BEST_UPTO", -1.0)
        assert called(lam) != [(int(j),) for j in anchor], lam
        monkeypatch.undo()


def test_needs_a_checkpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORCHESTRA_POLICY_CHECKPOINT", raising=False)
    import orchestrator.policies.learned  # noqa: F401 - registers "learned"

    with pytest.raises(ValueError, match="checkpoint"):
        make_policy("learned", {})


def test_a_checkpoint_carries_its_cascade_gates_and_a_run_uses_the_nearest(checkpoint: Checkpoint) -> None:
    """`train` fits the agreement cascade's gate at each preset's λ, as the evaluation fits it;
    `{"cascade": true}` reviews with the one fit nearest to the run's λ, except where a preset's
    bound holds the item to one pair (from λ = 1; λ = 0 is bound only on a larger calibration)."""
    path, _ = checkpoint
    policy = _policy(checkpoint, cascade=True)
    assert sorted(policy.loaded.gates) == sorted(COST_PRESETS.values())
    _, payload = load_checkpoint(path)
    assert sorted(payload["cascade"]) == sorted(repr(lam) for lam in COST_PRESETS.values())
    for lam, fit_at in ((0.0, 0.0), (0.04, 0.05), (0.3, 0.05), (0.8, 1.0)):
        gate = policy.cascade_gate(_observe(_root("question 1"), text="question 1", cost_preference=lam))
        assert gate == policy.loaded.gates[fit_at]
    for lam in (1.0, 2.0):
        assert policy.cascade_gate(_observe(_root("question 1"), text="question 1", cost_preference=lam)) is None
    assert _policy(checkpoint).cascade_gate(_observe(_root("q"), text="q")) is None


def test_a_cascade_needs_a_checkpoint_with_gates(tmp_path: Path) -> None:
    table, emb = synthetic_table(n=20, seed=0)
    save_checkpoint(
        tmp_path / "old.pt",
        PolicyNet(PolicyConfig(hidden=8)),
        extra={"context": context_payload(make_context(table, emb))},
    )
    with pytest.raises(ValueError, match="carries no cascade gate"):
        make_policy("learned", {"checkpoint": str(tmp_path / "old.pt"), "cascade": True})


def _deciding(checkpoint: Checkpoint, *, split: bool, **config: object) -> LearnedPolicy:
    """The checkpoint's policy with a decompose head trained on composites, forced one way."""
    policy = _policy(checkpoint, **config)
    net = copy.deepcopy(policy.net)
    with torch.no_grad():
        net.decompose_head[-1].bias.fill_(50.0 if split else -50.0)
    loaded = replace(policy.loaded, net=net, decides_composites=True)
    return LearnedPolicy(policy.learned, embedder=policy.embedder, loaded=loaded)


def test_a_head_trained_on_composites_solves_one_whole_with_the_pair_worth_most_on_all_parts(
    checkpoint: Checkpoint,
) -> None:
    recorded = [list(pair) for pair in PAIRS]
    items: list[dict[str, Any]] = [
        {"prompt": "question 6", "item_id": "t.6", "domain": "math", "recorded_pairs": recorded},
        {"items": [
            {"prompt": "question 7", "item_id": "t.7", "domain": "reasoning", "recorded_pairs": recorded},
            {"prompt": "question 8", "item_id": "t.8", "domain": "math", "recorded_pairs": recorded[1:]},
        ]},
    ]  # fmt: skip
    fields = {"decomposable": True, "task_metadata": {"items": items}}
    composite = _observe(_root("question 9"), text="question 9", **fields)
    # A checkpoint whose head never saw a composite splits it, as before.
    assert isinstance(check_action(_policy(checkpoint).act(composite), composite), Decompose)
    assert isinstance(check_action(_deciding(checkpoint, split=True).act(composite), composite), Decompose)
    for lam in (0.0, 2.0):
        policy = _deciding(checkpoint, split=False, cost_preference=lam)
        action = check_action(policy.act(composite), composite)
        assert isinstance(action, Solve) and action.pair in {MID, CHEAP}  # DEAR is not recorded on t.8
        # The pair of most estimated worth summed over the three parts, as the evaluation picks it.
        worth = []
        for prompt, domain in (("question 6", "math"), ("question 7", "reasoning"), ("question 8", "math")):
            view = NodeView(key="p", kind="subtask", text=prompt, status="ready", depth=1, domain=domain)
            found = policy.episode(view, composite, [p for p in RUNTIME_PAIRS if p.ref in {MID, CHEAP}])
            worth.append(episode.estimated_worth(found.batch, lam)[0])
        total = torch.stack(worth).sum(0)
        assert action.pair == found.refs[int(total.argmax())]
        assert policy.delegate_pair(items, composite) == action.pair
    # The whole call answered: its answer is taken, part by part. It failed: the task is split.
    answered = _root("question 9", status="answered", attempts=(AttemptView(MID, "ok", number=1, output="Part 1: A"),))
    done = _observe(answered, text="question 9", **fields)
    assert check_action(policy.act(done), done) == Accept("root", 1)
    failed = _root("question 9", attempts=(AttemptView(MID, "error", error_kind="no_recording"),))
    retry = _observe(failed, text="question 9", **fields)
    action = check_action(policy.act(retry), retry)
    assert isinstance(action, Decompose) and [s.id for s in action.subtasks] == ["item1", "part2"]
    assert action.subtasks[1].metadata["items"] == items[1]["items"]
