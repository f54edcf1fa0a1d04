"""Test-time scaling on recorded outcomes: N candidate plans from the policy, one executed.

Lines, each scored on the same candidates (shapes: n items, N candidates, p pairs):
- n1: one sampled plan executed (the expected score and cost over the N samples);
- rm: OrchRM picks the top of the N, only it is executed;
- rm_matched: OrchRM's accuracy-only reward (λ = 0), the best it can pick with a mean
  *estimated* cost of at most n1's (`select_matched`; estimates only, known before a call:
  the prompt's length, prices, and costs on the train items, `prompt_cost_estimate`; no
  recorded outcome of a test item is read to tune it): best-of-N at the same cost as N = 1;
- majority: every distinct candidate executed, the most common answer kept;
- oracle: pass@N, every distinct candidate executed, right if any is.
Given the policy's greedy plan (its single most likely one: what a run without best_of
executes), two more:
- greedy: that plan executed;
- rm_at_greedy: as rm_matched, held to the greedy plan's estimated cost instead of n1's.
Scoring plans with OrchRM calls no model: its token count is 0, and the accounting says so.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from orchestrator.learning.features import domain_indices
from orchestrator.learning.responses import answer_key
from orchestrator.outcomes import DOMAINS
from orchestrator.routing.metrics import macro_accuracy
from orchestrator.routing.table import OutcomeTable

LINES = ("n1", "rm", "rm_matched", "majority", "oracle")
GREEDY_LINES = ("greedy", "rm_at_greedy")  # with a greedy plan only


@dataclass(frozen=True)
class LineResult:
    name: str
    macro_acc: float
    cost_per_query: float  # USD of executed calls, recorded
    executed_per_query: float  # plans (distinct pair calls) executed
    tokens_per_query: float  # LLM tokens of executed calls, recorded
    scoring_tokens: int  # LLM tokens spent choosing among candidates
    per_benchmark: dict[str, float]


def select_matched(reward: np.ndarray, est_cost: np.ndarray, target: float) -> np.ndarray:
    """int64 [n]: per item a candidate, the highest rewards for a mean estimated cost of at most
    `target` (reward, est_cost [n, N]).

    The smallest penalty μ ≥ 0 on estimated cost that keeps within the budget picks every
    item's candidate of highest reward - μ·est_cost. Items often switch together as μ falls
    (their reward and cost gaps are alike), which can leave most of the budget unspent, so
    the items that switch just below μ are then moved up, best reward per added cost first,
    while the budget allows.
    """

    def pick(mu: float) -> np.ndarray:
        chosen: np.ndarray = (reward - mu * est_cost).argmax(axis=1)
        return chosen

    def spent(chosen: np.ndarray) -> float:
        return float(np.take_along_axis(est_cost, chosen[:, None], axis=1).mean())

    if spent(pick(0.0)) <= target:
        return pick(0.0)
    lo, hi = 0.0, 1.0
    while spent(pick(hi)) > target and hi < 1e6:
        hi *= 2
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if spent(pick(mid)) <= target else (mid, hi)
    chosen, better = pick(hi), pick(lo)
    rows = np.arange(len(chosen))
    gain = reward[rows, better] - reward[rows, chosen]
    extra = est_cost[rows, better] - est_cost[rows, chosen]
    budget = (target - spent(chosen)) * len(chosen)
    for i in np.argsort(-gain / np.maximum(extra, 1e-12), kind="stable"):
        if gain[i] > 0 and extra[i] <= budget:
            chosen[i] = better[i]
            budget -= max(extra[i], 0.0)
    return chosen


def prompt_cost_estimate(
    train: OutcomeTable, test: OutcomeTable, input_price: np.ndarray, fallback: np.ndarray
) -> np.ndarray:
    """float64 [test items, p]: each pair's cost on each test item as known before it runs (USD).

    The prompt's tokens at the pair's input price (`input_price` [p], USD per token), plus
    the pair's mean output cost on the train items of the item's domain (on all train items
    where the domain has none). `fallback` [test items, p] stands where either is unknown (a
    pair without a price). Against the recorded costs of the sampled candidates it correlates
    0.993-0.995, the domain's mean cost 0.973-0.981 (RouterBench + LLMRouter, seeds 0-2).
    """
    known = train.available()
    output = np.where(known, np.nan_to_num(train.cost) - np.nan_to_num(train.tokens_in) * input_price, 0.0)
    overall = output.sum(0) / np.maximum(known.sum(0), 1)
    train_dom, test_dom = domain_indices(train.domains), domain_indices(test.domains)
    by_domain = np.tile(overall, (len(DOMAINS), 1))
    for d in np.unique(train_dom):
        rows = train_dom == d
        count = known[rows].sum(0)
        by_domain[d] = np.where(count > 0, output[rows].sum(0) / np.maximum(count, 1), overall)
    estimate = test.tokens_in * input_price + by_domain[test_dom]
    out: np.ndarray = np.where(np.isfinite(estimate), np.maximum(estimate, 0.0), fallback)
    return out


def evaluate_lines(
    test: OutcomeTable,
    candidates: np.ndarray,
    reward: np.ndarray,
    est_cost: np.ndarray,
    *,
    reward_acc: np.ndarray | None = None,
    greedy: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, LineResult]:
    """Score every line; candidates [n, N] columns; reward (at the run's λ), reward_acc (at λ = 0,
    default `reward`) and est_cost [n, N] for them; greedy: the greedy plan's pair column and
    its estimated cost [n] each, for the greedy lines."""
    acc_reward = reward if reward_acc is None else reward_acc
    n, k = candidates.shape
    rows = np.arange(n)[:, None]
    score = np.nan_to_num(test.score[rows, candidates])  # [n, N]
    cost = np.nan_to_num(test.cost[rows, candidates])
    tokens = np.nan_to_num(test.tokens_in[rows, candidates] + test.tokens_out[rows, candidates])

    def single(chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pick = chosen[:, None]
        return (
            np.take_along_axis(score, pick, 1)[:, 0],
            np.take_along_axis(cost, pick, 1)[:, 0],
            np.take_along_axis(tokens, pick, 1)[:, 0],
        )

    distinct = np.zeros((n, k), dtype=bool)  # the first sample of each distinct pair: what runs
    for i in range(n):
        _, first = np.unique(candidates[i], return_index=True)
        distinct[i, first] = True
    majority = np.array([_majority(test, i, candidates[i]) for i in range(n)])
    lines: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {
        "n1": (score.mean(1), cost.mean(1), tokens.mean(1), np.ones(n)),
        "rm": (*single(reward.argmax(1)), np.ones(n)),
        "rm_matched": (*single(select_matched(acc_reward, est_cost, float(est_cost.mean()))), np.ones(n)),
        "majority": (
            np.take_along_axis(score, majority[:, None], 1)[:, 0],
            (cost * distinct).sum(1),
            (tokens * distinct).sum(1),
            distinct.sum(1).astype(float),
        ),
        "oracle": (score.max(1), (cost * distinct).sum(1), (tokens * distinct).sum(1), distinct.sum(1).astype(float)),
    }
    if greedy is not None:
        pair, pair_est = greedy
        at = np.arange(n), pair
        lines["greedy"] = (
            np.nan_to_num(test.score[at]),
            np.nan_to_num(test.cost[at]),
            np.nan_to_num(test.tokens_in[at] + test.tokens_out[at]),
            np.ones(n),
        )
        lines["rm_at_greedy"] = (*single(select_matched(acc_reward, est_cost, float(pair_est.mean()))), np.ones(n))
    out = {}
    for name, (s, c, t, e) in lines.items():
        per_bench = {b: float(s[np.array(test.benchmarks) == b].mean()) for b in sorted(set(test.benchmarks))}
        out[name] = LineResult(
            name=name,
            macro_acc=macro_accuracy(s, test.benchmarks),
            cost_per_query=float(c.mean()),
            executed_per_query=float(e.mean()),
            tokens_per_query=float(t.mean()),
            scoring_tokens=0,
            per_benchmark=per_bench,
        )
    return out


def mean_lines(draws: list[dict[str, LineResult]]) -> dict[str, LineResult]:
    """Every figure of each line averaged over draws of the candidates (the same lines in each)."""
    out = {}
    for name, first in draws[0].items():
        lines = [draw[name] for draw in draws]
        out[name] = LineResult(
            name=name,
            macro_acc=float(np.mean([line.macro_acc for line in lines])),
            cost_per_query=float(np.mean([line.cost_per_query for line in lines])),
            executed_per_query=float(np.mean([line.executed_per_query for line in lines])),
            tokens_per_query=float(np.mean([line.tokens_per_query for line in lines])),
            scoring_tokens=max(line.scoring_tokens for line in lines),
            per_benchmark={b: float(np.mean([line.per_benchmark[b] for line in lines])) for b in first.per_benchmark},
        )
    return out


def _majority(test: OutcomeTable, item: int, columns: np.ndarray) -> int:
    """Index (into `columns`) of a candidate giving the most common answer; the earliest on a tie."""
    keys = [answer_key(test.responses[item][int(j)]) for j in columns]
    counts = Counter(k for k in keys if k is not None)
    if not counts:
        return 0
    best = max(counts.values())
    for index, key in enumerate(keys):
        if key is not None and counts[key] == best:
            return index
    return 0
