"""Best-of-N at run time: OrchRM scores a policy's N candidate plans for the root, and only
the top one is executed.

A candidate is the one-node plan of an admissible pair. Scoring needs the task's
embedding and the reward network, no model call: the note a policy records says so
(`scoring_tokens: 0`). The reward model is loaded from the path in the policy's config
(`reward_model`) once per version of the file (`orchestrator.filecache`), since the engine
makes a policy anew at every step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from orchestrator.core.protocol import Pair
from orchestrator.filecache import load_once

if TYPE_CHECKING:
    from orchestrator.reward.model import RewardModel

Embedder = Callable[[list[str]], np.ndarray]


def load_reward_model(path: str) -> RewardModel:
    """The OrchRM checkpoint at `path`, loaded once per version of the file."""
    from orchestrator.reward.model import RewardModel

    return load_once("reward_model", path, RewardModel.load)


class PlanScorer:
    """Scores pairs as one-node plans for a task, at a cost preference λ."""

    def __init__(self, path: str, *, embedder: Embedder | None = None) -> None:
        self.path = path
        self.embedder = embedder
        self.model = load_reward_model(path)

    def score(self, text: str, domain: str, pairs: Sequence[Pair], *, lam: float) -> np.ndarray:
        """float64 [len(pairs)]: OrchRM's reward of solving the task whole with each pair."""
        from orchestrator.learning.features import PairInfo
        from orchestrator.reward.plans import Plan

        if not pairs:
            return np.zeros(0)
        embedder = self.embedder
        if embedder is None:
            from orchestrator.embedding import embed

            embedder = embed
        emb = np.asarray(embedder([text]), dtype=np.float32)  # [1, 384]
        plans = [Plan.single(pair.model, pair.ref.primitive) for pair in pairs]
        infos = {
            (pair.model, pair.ref.primitive): PairInfo(
                model=pair.model.removeprefix("replay/"),
                primitive=pair.ref.primitive,
                input_per_mtok=pair.input_cost_per_mtok,
                output_per_mtok=pair.output_cost_per_mtok,
                context_window=pair.context_window,
            )
            for pair in pairs
        }
        embeddings = np.repeat(emb, len(pairs), axis=0)  # one row per plan
        return self.model.score(embeddings, [domain] * len(pairs), plans, lam=lam, infos=infos)


def best_of_note(n: int, lam: float, proposals: Sequence[Pair], rewards: np.ndarray, *, sampler: str) -> dict[str, Any]:
    """What a best-of-N choice records on the node: every candidate, its reward, the chosen index."""
    chosen = int(np.argmax(rewards))
    return {
        "best_of": {
            "n": n,
            "lam": lam,
            "sampler": sampler,
            "candidates": [
                {
                    "endpoint_id": pair.ref.endpoint_id,
                    "model": pair.model,
                    "primitive": pair.ref.primitive,
                    "reward": float(reward),
                }
                for pair, reward in zip(proposals, rewards, strict=True)
            ],
            "chosen": chosen,
            "executed": 1,
            "scoring_tokens": 0,  # scoring plans is the reward network, not a model call
        }
    }
