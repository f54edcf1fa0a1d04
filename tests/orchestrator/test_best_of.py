"""Best-of-N at run time: the policy proposes N root plans, OrchRM scores them, one is solved."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from orchestrator.core.protocol import (
    AttemptView,
    Budget,
    NodeView,
    Observation,
    Pair,
    PairRef,
    Repair,
    Solve,
    check_action,
)
from orchestrator.policies import make_policy
from orchestrator.policies.best_of import PlanScorer, load_reward_model
from orchestrator.policies.learned import sample_without_replacement
from tests.orchestrator.synthetic_outcomes import PAIRS
from tests.orchestrator.test_learned_policy import (
    Checkpoint,
    checkpoint,  # noqa: F401 - the trained policy fixture
)
from tests.support.reward import tiny_reward_model

DEAR, MID, CHEAP = PairRef(1, "direct"), PairRef(2, "direct"), PairRef(3, "direct")
PAIRS_SEEN = (
    Pair(DEAR, f"replay/{PAIRS[0][0]}", 10.0, 30.0),
    Pair(MID, f"replay/{PAIRS[1][0]}", 0.9, 0.9),
    Pair(CHEAP, f"replay/{PAIRS[2][0]}", 0.2, 0.2),
    Pair(PairRef(4, "direct"), "replay/unknown-model", None, None),
)


def fake_embed(texts: list[str]) -> np.ndarray:
    rng = np.random.default_rng(len(texts))
    emb = rng.normal(size=(len(texts), 384)).astype(np.float32)
    return emb / np.linalg.norm(emb, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def reward_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    return tiny_reward_model(tmp_path_factory.mktemp("rm") / "reward.pt")


def observe(best_of: int, *, attempts: tuple[AttemptView, ...] = (), lam: float | None = None) -> Observation:
    root = NodeView(key="root", kind="root", text="question 3", status="ready", depth=0, attempts=attempts)
    return Observation(
        task_text="question 3", decomposable=False, nodes=(root,), budget_left=Budget(), pairs=PAIRS_SEEN,
        cost_preference=lam, domain="math", best_of=best_of,
    )  # fmt: skip


def test_the_default_policy_scores_its_first_n_candidates_and_solves_the_best(reward_model: Path) -> None:
    policy = make_policy("default", {"reward_model": str(reward_model), "embedder": fake_embed})
    observation = observe(3, lam=0.5)
    action = check_action(policy.act(observation), observation)
    assert isinstance(action, Solve)
    note = action.note["best_of"]
    # The default policy's order: cheapest first by price, the unpriced last; N = 3 of them.
    assert [c["endpoint_id"] for c in note["candidates"]] == [3, 2, 1]
    rewards = PlanScorer(str(reward_model), embedder=fake_embed).score(
        "question 3", "math", [PAIRS_SEEN[2], PAIRS_SEEN[1], PAIRS_SEEN[0]], lam=0.5
    )
    assert [c["reward"] for c in note["candidates"]] == pytest.approx(list(rewards))
    assert note["chosen"] == int(np.argmax(rewards))
    assert action.pair.endpoint_id == note["candidates"][note["chosen"]]["endpoint_id"]
    assert (note["n"], note["lam"], note["scoring_tokens"], note["executed"]) == (3, 0.5, 0, 1)


def test_best_of_one_or_no_reward_model_is_the_plain_choice(reward_model: Path) -> None:
    plain = make_policy("default", {})
    with_rm = make_policy("default", {"reward_model": str(reward_model), "embedder": fake_embed})
    for policy, n in ((plain, 4), (with_rm, 1)):
        action = policy.act(observe(n))
        assert isinstance(action, Solve) and action.pair == CHEAP and not action.note


def test_a_repair_is_not_best_of_n(reward_model: Path) -> None:
    policy = make_policy("default", {"reward_model": str(reward_model), "embedder": fake_embed})
    failed = (AttemptView(CHEAP, "error", error_kind="wrong_answer"),)
    action = policy.act(observe(4, attempts=failed))
    assert isinstance(action, Repair) and action.pair == MID


def test_the_reward_model_is_loaded_once_per_file_version(reward_model: Path) -> None:
    assert load_reward_model(str(reward_model)) is load_reward_model(str(reward_model))


def test_the_learned_policy_samples_n_candidates_from_its_softmax(
    checkpoint: Checkpoint,  # noqa: F811 - the fixture imported above
    reward_model: Path,
) -> None:
    path, vectors = checkpoint

    def embed(texts: list[str]) -> np.ndarray:
        return np.stack([vectors[t] for t in texts])

    policy = make_policy("learned", {"checkpoint": str(path), "reward_model": str(reward_model), "embedder": embed})
    observation = observe(4, lam=0.05)
    action = check_action(policy.act(observation), observation)
    assert isinstance(action, Solve)
    note = action.note["best_of"]
    assert note["n"] == 4 and len(note["candidates"]) == 4 and note["sampler"] == "policy softmax"
    solvers = {pair.ref.endpoint_id for pair in PAIRS_SEEN}
    # Four solving pairs: all four are drawn, once each.
    assert sorted(c["endpoint_id"] for c in note["candidates"]) == sorted(solvers)
    assert action.pair.endpoint_id == note["candidates"][note["chosen"]]["endpoint_id"]
    assert note["candidates"][note["chosen"]]["reward"] == max(c["reward"] for c in note["candidates"])
    again = policy.act(observation)
    assert isinstance(again, Solve) and again.note == action.note  # seeded by the task: a replayed step agrees


def test_sampling_is_distinct_while_it_can_be() -> None:
    logits = torch.tensor([3.0, 0.0, -2.0])
    assert sorted(sample_without_replacement(logits, 3, seed=1)) == [0, 1, 2]
    five = sample_without_replacement(logits, 5, seed=1)
    assert len(five) == 5 and sorted(five[:3]) == [0, 1, 2]
    assert sample_without_replacement(logits, 2, seed=7) == sample_without_replacement(logits, 2, seed=7)
    firsts = [sample_without_replacement(logits, 1, seed=s)[0] for s in range(200)]
    assert firsts.count(0) > 150  # drawn by the softmax: the top logit is drawn ~95% of the time


def test_train_rm_records_the_probability_of_a_right_answer_its_reward_means(reward_model: Path) -> None:
    """`train_rm` fits sigmoid(a·reward + b) to its items' recorded scores and stores (a, b),
    which best-of-N over composite plans averages over the parts (a higher reward: likelier right)."""
    a, b = load_reward_model(str(reward_model)).platt
    assert a > 0.1 and np.isfinite(b) and (a, b) != (1.0, 0.0)
