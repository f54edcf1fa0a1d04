"""A FrugalGPT-style cascade: call pairs from cheap to strong, stop when the answer looks reliable.

- The chain is the accuracy-cost Pareto front of the pairs on the fitting table (train, or
  the probe for an unseen pool), ordered by mean cost, at most `max_chain` long.
- Each stage but the last has a reliability scorer: a logistic regression that predicts
  whether the stage's answer is correct from [query embedding, response embedding,
  log length, no-response flag] (FrugalGPT scores the (query, answer) pair).
- On a test item the cascade executes the first stage, reads the response it returned
  (`executed_response`), and stops when the scorer's probability is >= the threshold τ;
  else it goes on. The last stage's answer is always taken. τ is the frontier knob: τ = 0
  stops at the first stage, τ > 1 always runs the whole chain.

Where no response text was recorded (LLMRouter) the scorer sees only the query, so the
cascade can only learn which queries a cheap stage gets right.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

from orchestrator.baselines.common import calibration_table, pair_cost, pair_macro_accuracy
from orchestrator.embedding import embed
from orchestrator.routing.methods import Routes, executed_response
from orchestrator.routing.table import OutcomeTable

EmbedFn = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class CascadeConfig:
    """The cascade's settings."""

    max_chain: int = 4  # most pairs in the chain
    c: float = 1.0  # inverse L2 strength of the reliability scorers
    correct_at: float = 0.5  # a recorded score at or above this counts as correct
    thresholds: tuple[float, ...] = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1.01)  # τ swept


def pareto_chain(accuracy: np.ndarray, cost: np.ndarray, max_chain: int) -> list[int]:
    """Columns on the accuracy-cost front, cheapest first, each more accurate than every cheaper one."""
    known = [j for j in range(len(cost)) if np.isfinite(cost[j]) and np.isfinite(accuracy[j])]
    order = sorted(known, key=lambda j: (cost[j], -accuracy[j]))
    front: list[int] = []
    for j in order:
        if not front or accuracy[j] > accuracy[front[-1]]:
            front.append(j)
    if len(front) > max_chain:  # keep the two ends and evenly spaced stages between
        keep = np.unique(np.round(np.linspace(0, len(front) - 1, max_chain)).astype(int))
        front = [front[k] for k in keep]
    return front


class Scorer:
    """P(correct) of one stage's answer; a constant where training saw one class only."""

    def __init__(self, features: np.ndarray, correct: np.ndarray, c: float, seed: int) -> None:
        self.constant: float | None = None
        if correct.min() == correct.max():
            self.constant = float(correct[0]) if len(correct) else 0.0
            return
        self.model = LogisticRegression(C=c, max_iter=2000, random_state=seed).fit(features, correct)

    def __call__(self, features: np.ndarray) -> np.ndarray:
        if self.constant is not None:
            return np.full(len(features), self.constant)
        probability: np.ndarray = self.model.predict_proba(features)[:, 1]
        return probability


class CascadeRouter:
    name = "cascade"

    def __init__(self, config: CascadeConfig | None = None, embed_fn: EmbedFn = embed) -> None:
        self.config = config or CascadeConfig()
        self.knobs = self.config.thresholds
        self.embed_fn = embed_fn
        self.chain: list[int] = []
        self._scorers: list[Scorer] = []
        self._fallback = np.zeros(0)
        self._memo: tuple[tuple[str, ...], np.ndarray] | None = None

    def features(self, table: OutcomeTable, col: int) -> np.ndarray:
        """float [n_items, 770]: query emb, response emb, log length, no-response flag of pair `col`."""
        responses = [executed_response(table, i, col) for i in range(table.n_items)]
        texts = [r or "" for r in responses]
        length = np.log1p([len(t) for t in texts])[:, None] / 10
        missing = np.array([[r is None] for r in responses], dtype=float)
        return np.hstack([self.embed_fn(table.prompts), self.embed_fn(texts), length, missing])

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        table = calibration_table(train, probe)
        cost = pair_cost(table)
        self.chain = pareto_chain(pair_macro_accuracy(table), cost, self.config.max_chain)
        self._fallback = -cost
        available = table.available()
        self._scorers = []
        for col in self.chain[:-1]:
            rows = np.flatnonzero(available[:, col])
            stage = table.rows(rows)
            correct = (stage.score[:, col] >= self.config.correct_at).astype(int)
            self._scorers.append(Scorer(self.features(stage, col), correct, self.config.c, seed))
        self._memo = None

    def reliability(self, test: OutcomeTable) -> np.ndarray:
        """float [n_items, len(chain) - 1]: each stage's P(correct) given the response it returns.

        Computed for every item at once for speed; `route` reads a stage's value only when it
        has executed that stage.
        """
        key = tuple(test.item_ids)
        if self._memo is None or self._memo[0] != key:
            probs = [scorer(self.features(test, col)) for scorer, col in zip(self._scorers, self.chain, strict=False)]
            self._memo = (key, np.stack(probs, axis=1) if probs else np.zeros((test.n_items, 0)))
        return self._memo[1]

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        tau = 0.5 if knob is None else knob
        available = test.available()
        reliable = self.reliability(test)
        executed: list[tuple[int, ...]] = []
        for i in range(test.n_items):
            calls: list[int] = []
            for stage, col in enumerate(self.chain):
                if not available[i, col]:
                    continue
                calls.append(col)
                if stage == len(self.chain) - 1 or reliable[i, stage] >= tau:
                    break
            if not calls:  # no chain pair recorded on this item: the cheapest available pair
                calls.append(int(np.argmax(np.where(available[i], self._fallback, -np.inf))))
            executed.append(tuple(calls))
        return Routes(executed=executed, final=[calls[-1] for calls in executed])
