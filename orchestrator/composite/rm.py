"""OrchRM over composite plans: their features, self-supervised pairs and sampled candidates.

A composite plan (`composite.outcome`: delegate a node to one pair, or decompose it, a nested
part again either way) has the features of any plan (`reward.features`, PLAN_DIM), read per
leaf: each recorded item under the composite is answered by one pair, and the estimates of
that pair are the ones for that item's own text, not the composite's:

- the pair descriptor: the mean over the leaves of the descriptor of the pair answering each;
- the anchor (the one-node plan's estimated accuracy): the mean over the leaves of the per-item
  accuracy estimate of the pair answering each, times the interference factor of a delegated
  node, since a composite scores the mean of its leaves. For one item it is the one-node plan's;
- nodes: the calls that answer (a delegated node is one); depth: the levels of calls (1
  delegated, 2 planned then solved, 3 when a nested part is planned again); decompose: the root
  is planned;
- the estimated cost: the answering calls' estimated costs on their leaves plus every planner
  call's (`CompositeCosting.planner_cost`, known before anything runs).

Pairs (`composite_pairs`, kinds in `COMPOSITE_SOURCES`), each over two plans of one composite,
judged by its recorded outcome (right: a mean score of at least `RIGHT`):
- decomposed_vs_delegated: one plan planned (sampled from the policy, or its greedy plan), the
  other delegated (the same, or the whole composite to any pair recorded on all its parts); one
  right, the other wrong, scores `GAP` apart;
- one_part: two decomposed plans differing only in one item part's pair, that part right with
  one and wrong with the other;
- specialized_over_base: the policy's greedy plan, right, over a random plan (random decisions,
  random recorded pairs) that is wrong, or right but at least as dear.

Shapes: L leaves (table rows), p pool pairs, m plans, D = PLAN_DIM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from orchestrator.composite.build import Composite
from orchestrator.composite.outcome import CompositeCosting, Decompose, Delegate, Plan, Solve
from orchestrator.learning.features import PAIR_DIM
from orchestrator.reward.features import COST, PLAN_DIM, encode_cost
from orchestrator.reward.pairs import GAP, RIGHT
from orchestrator.reward.train import PairTensors, lam_range

COMPOSITE_SOURCES = ("decomposed_vs_delegated", "one_part", "specialized_over_base")


@dataclass(frozen=True)
class LeafEstimates:
    """What OrchRM knows of every pool pair on some table rows before anything runs."""

    rows: Mapping[int, int]  # table row -> index below
    plans: np.ndarray  # float32 [L, p, D]: each pair's one-node plan features on the row's item
    cost: np.ndarray  # float64 [L, p]: each pair's estimated cost on it, USD


@dataclass(frozen=True)
class Calls:
    """A composite plan read leaf by leaf: which pair answers each leaf, and the plan's shape."""

    leaves: list[tuple[int, int, float]]  # (table row, column, interference factor); column -1: none
    tried: list[tuple[int, int]]  # (table row, column) of calls paid before the answering one
    planned: list[Composite]  # nodes the planner splits
    nodes: int  # answering calls
    depth: int  # levels of calls


def calls_of(composite: Composite, plan: Plan, costing: CompositeCosting) -> Calls:
    leaves: list[tuple[int, int, float]] = []
    tried: list[tuple[int, int]] = []
    planned: list[Composite] = []

    def walk(c: Composite, p: Plan) -> tuple[int, int]:
        if isinstance(p, Delegate):
            rows = c.leaves()
            leaves.extend((r, p.col, costing.factor(len(rows))) for r in rows)
            tried.extend((r, t) for t in p.tried for r in rows)
            return 1, 1
        planned.append(c)
        nodes, depth = 0, 1
        for part, choice in zip(c.parts, p.parts, strict=True):
            if isinstance(part, Composite):
                assert not isinstance(choice, int | Solve), f"{part.key} is a composite"
                n, d = walk(part, choice)
            else:
                assert isinstance(choice, int | Solve), f"part {part} of {c.key} is an item"
                solve = choice if isinstance(choice, Solve) else Solve(choice)
                leaves.append((part, solve.col, 1.0))
                tried.extend((part, t) for t in solve.tried)
                n, d = 1, 1
            nodes, depth = nodes + n, max(depth, d)
        return nodes, 1 + depth

    nodes, depth = walk(composite, plan)
    return Calls(leaves, tried, planned, nodes, depth)


def plan_features(
    composites: Sequence[Composite], plans: Sequence[Plan], estimates: LeafEstimates, costing: CompositeCosting,
    cost_ref: float,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(float32 [m, D] features, float64 [m] estimated cost in USD) of each composite's plan."""
    out = np.zeros((len(plans), PLAN_DIM), dtype=np.float32)
    spend = np.zeros(len(plans))
    for r, (c, plan) in enumerate(zip(composites, plans, strict=True)):
        calls = calls_of(c, plan, costing)
        descs, accs, cost = [], [], sum(costing.planner_cost(node) for node in calls.planned)
        for row, col, factor in calls.leaves:
            at = estimates.rows[row]
            if col < 0:  # no answer taken: nothing right
                accs.append(0.0)
                continue
            descs.append(estimates.plans[at, col, :PAIR_DIM])
            accs.append(factor * float(estimates.plans[at, col, PAIR_DIM]))
            cost += float(estimates.cost[at, col])
        cost += sum(float(estimates.cost[estimates.rows[row], col]) for row, col in calls.tried)
        if descs:
            out[r, :PAIR_DIM] = np.mean(descs, axis=0)
        out[r, PAIR_DIM:] = [
            float(np.mean(accs)),
            min(calls.nodes, 64) / 8,
            min(calls.depth, 16) / 4,
            float(isinstance(plan, Decompose)),
            float(encode_cost(np.asarray(cost / cost_ref))),
        ]
        spend[r] = cost
    return out, spend


def leaf_estimates(rows: Sequence[int], plans: np.ndarray, cost: np.ndarray | None, cost_ref: float) -> LeafEstimates:
    """Estimates of `rows` from their one-node plan features [L, p, D] (`reward.features.table_plan_features`)
    and estimated costs [L, p] USD (default: the pool's mean on the row's domain, the features' own)."""
    domain_cost = plans[..., COST].astype(np.float64) * cost_ref
    return LeafEstimates({int(r): n for n, r in enumerate(rows)}, plans, domain_cost if cost is None else cost)


# --- candidates ---


def sampled_plan(
    c: Composite, cols: Mapping[int, int], pairs: Mapping[str, int | None], split: Mapping[str, bool]
) -> Plan:
    """The plan of `c` given each leaf's column, each node's delegate pair and decision."""
    pick = pairs[c.key]
    if pick is not None and not split[c.key]:
        return Delegate(pick)
    return Decompose(
        tuple(sampled_plan(p, cols, pairs, split) if isinstance(p, Composite) else cols[p] for p in c.parts)
    )


def random_plan(c: Composite, costing: CompositeCosting, rng: np.random.Generator) -> Plan:
    """A base plan: a fair coin at each node with a choice, a random recorded pair for each call."""
    ok = costing.table.available()
    whole = np.flatnonzero(ok[list(c.leaves())].all(axis=0))
    if len(whole) and rng.random() < 0.5:
        return Delegate(int(rng.choice(whole)))
    return Decompose(
        tuple(
            random_plan(p, costing, rng) if isinstance(p, Composite) else int(rng.choice(np.flatnonzero(ok[p])))
            for p in c.parts
        )
    )


def one_part_variants(
    c: Composite, plan: Plan, costing: CompositeCosting, rng: np.random.Generator
) -> tuple[Plan, Plan] | None:
    """Two plans equal to `plan` (decomposed) but in one item part's pair: that part right with
    the first, wrong with the second; None where no item part has both kinds of pair."""
    if not isinstance(plan, Decompose):
        return None
    table, ok = costing.table, costing.table.available()
    items = [n for n, p in enumerate(c.parts) if not isinstance(p, Composite)]
    for n in rng.permutation(items):
        row = c.parts[n]
        assert isinstance(row, int)
        right = np.flatnonzero(ok[row] & (table.score[row] >= RIGHT))
        wrong = np.flatnonzero(ok[row] & (table.score[row] < RIGHT))
        if len(right) and len(wrong):
            parts = list(plan.parts)
            good, bad = list(parts), list(parts)
            good[n], bad[n] = int(rng.choice(right)), int(rng.choice(wrong))
            return Decompose(tuple(good)), Decompose(tuple(bad))
    return None


@dataclass
class PlanPairs:
    """Pairs of composite plans: the winner first."""

    composite: list[int]  # index into the composites
    win: list[Plan]
    lose: list[Plan]
    source: list[str]

    def add(self, c: int, win: Plan, lose: Plan, source: str) -> None:
        self.composite.append(c)
        self.win.append(win)
        self.lose.append(lose)
        self.source.append(source)

    def __len__(self) -> int:
        return len(self.composite)


def composite_pairs(
    composites: Sequence[Composite],
    candidates: Sequence[Sequence[Plan]],
    greedy: Sequence[Plan],
    costing: CompositeCosting,
    *,
    seed: int,
) -> PlanPairs:
    """The pairs of `COMPOSITE_SOURCES` on each composite, from its sampled `candidates` and the
    policy's `greedy` plan (at most one pair of each kind per composite)."""
    rng = np.random.default_rng([seed, 23])
    ok = costing.table.available()
    out = PlanPairs([], [], [], [])
    for i, c in enumerate(composites):
        whole_cols = np.flatnonzero(ok[list(c.leaves())].all(axis=0))  # delegated to each recorded pair too
        plans = [*candidates[i], greedy[i], *(Delegate(int(j)) for j in whole_cols)]
        scores = [costing.outcome(c, p).score for p in plans]
        split = [k for k, p in enumerate(plans) if isinstance(p, Decompose)]
        whole = [k for k, p in enumerate(plans) if isinstance(p, Delegate)]
        crossed = [
            (a, b)
            for a in split
            for b in whole
            if (scores[a] >= RIGHT) != (scores[b] >= RIGHT) and abs(scores[a] - scores[b]) >= GAP
        ]
        if crossed:
            a, b = crossed[int(rng.integers(len(crossed)))]
            win, lose = (a, b) if scores[a] > scores[b] else (b, a)
            out.add(i, plans[win], plans[lose], "decomposed_vs_delegated")
        if split:
            variants = one_part_variants(c, plans[split[int(rng.integers(len(split)))]], costing, rng)
            if variants is not None:
                out.add(i, *variants, "one_part")
        mine = costing.outcome(c, greedy[i])
        if mine.score >= RIGHT:
            base = random_plan(c, costing, rng)
            theirs = costing.outcome(c, base)
            if base != greedy[i] and (theirs.score < RIGHT or theirs.cost >= mine.cost):
                out.add(i, greedy[i], base, "specialized_over_base")
    return out


def pair_tensors(
    pairs: PlanPairs,
    composites: Sequence[Composite],
    tasks: np.ndarray,
    estimates: LeafEstimates,
    costing: CompositeCosting,
    cost_ref: float,
    *,
    group_offset: int = 0,
) -> PairTensors:
    """The pairs as OrchRM's training tensors (tasks [n composites, T])."""
    cs = [composites[i] for i in pairs.composite]
    win, _ = plan_features(cs, pairs.win, estimates, costing, cost_ref)
    lose, _ = plan_features(cs, pairs.lose, estimates, costing, cost_ref)
    cost_win = np.array([costing.outcome(c, p).cost for c, p in zip(cs, pairs.win, strict=True)]) / cost_ref
    cost_lose = np.array([costing.outcome(c, p).cost for c, p in zip(cs, pairs.lose, strict=True)]) / cost_ref
    source = np.asarray(pairs.source, dtype="<U32")
    lo, hi = lam_range(source, cost_win, cost_lose)
    index = np.asarray(pairs.composite, dtype=np.int64)
    return PairTensors(
        task=torch.from_numpy(tasks[index].astype(np.float32)),
        win=torch.from_numpy(win),
        lose=torch.from_numpy(lose),
        source=source.astype(str),
        group=index + group_offset,
        lam_lo=lo,
        lam_hi=hi,
    )


def leaf_probabilities(accuracy: np.ndarray, platt: tuple[float, float]) -> np.ndarray:
    """float64 [L, p]: OrchRM's accuracy score of each one-node plan on each leaf, as a probability
    of a right answer (Platt scaling (a, b), fit on the train items' recorded scores)."""
    a, b = platt
    out: np.ndarray = 1 / (1 + np.exp(-(a * accuracy + b)))
    return out


def node_scores(
    composites: Sequence[Composite], plans: Sequence[Plan], rows: Mapping[int, int], probability: np.ndarray,
    costing: CompositeCosting,
) -> np.ndarray:  # fmt: skip
    """float64 [m]: each plan scored node by node: the mean over its leaves of OrchRM's probability
    that the pair answering the leaf is right on it (`leaf_probabilities`, rows indexed by `rows`),
    times a delegated node's interference factor: what a composite scores, estimated."""
    out = np.zeros(len(plans))
    for r, (c, plan) in enumerate(zip(composites, plans, strict=True)):
        calls = calls_of(c, plan, costing)
        out[r] = np.mean([f * probability[rows[row], col] if col >= 0 else 0.0 for row, col, f in calls.leaves])
    return out
