"""What a plan for a composite scores and costs, from the records alone.

Two options at every composite node:

- `Delegate(col)`: one pair answers every part in one call. Cost: the pair's recorded cost
  on each part, summed (its recorded tokens of the parts, at its prices). Score: its
  recorded score on each part, times the interference factor.
- `Decompose(parts)`: the planner call, then each part's own plan (a column for an item, a
  plan for a nested composite). Cost and score: the planner's, and the parts' outcomes.

A policy that escalates (a cascade) calls more than one pair for a node: `Delegate(col,
tried)` and an item part's `Solve(col, tried)` also pay for the `tried` calls before the one
whose answer counts; `col` -1: no answer was taken (a run whose node failed), none right.

**Assumption (delegate):** answering several parts in one call scores each part as the
pair's recorded answer to that part alone: no interference between parts. `penalty` makes
it switchable: each part's score is multiplied by max(0, 1 - penalty * (parts - 1)), parts
counted over the leaves the one call answers.

**Assumption (decompose):** the planner call is priced, not replayed: no recording of a
plan prompt exists. Its tokens are estimated at 4 characters a token (`estimate_tokens`)
from the real plan prompt (`planner.plan_messages` of the composite's text) and the plan
that names the composite's parts as subtasks, at the planner model's prices; the planner is
assumed to return that plan.

A composite's score is the mean of its leaves' scores, as a live composite run's is
(`core.step.verify`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from orchestrator.composite.build import Composite, text_of
from orchestrator.outcomes import estimate_tokens
from orchestrator.planner import plan_messages
from orchestrator.routing.table import OutcomeTable


@dataclass(frozen=True)
class Delegate:
    """One pair (a table column) answers the whole composite in one call; `tried`: pairs
    called on the whole composite before it, paid for, their answers dropped."""

    col: int
    tried: tuple[int, ...] = ()


@dataclass(frozen=True)
class Solve:
    """An item part's calls: `col` answers it, after the `tried` pairs (paid for, dropped)."""

    col: int
    tried: tuple[int, ...] = ()


@dataclass(frozen=True)
class Decompose:
    """Plan, then one entry per part: a column for an item, a plan for a nested composite."""

    parts: tuple[int | Solve | Plan, ...]


Plan = Delegate | Decompose


@dataclass(frozen=True)
class Outcome:
    score: float  # the mean of the leaves' scores
    cost: float  # USD
    calls: int  # model calls, the planner's included
    violations: int  # leaves sent to a pair not recorded on them (scored 0, at the dearest pair's cost)
    decomposed: bool  # the root was decomposed


class CompositeCosting:
    """Scores and costs of plans for composites of one table's items."""

    def __init__(self, table: OutcomeTable, *, planner_price: Mapping[str, float], penalty: float = 0.0) -> None:
        if not 0.0 <= penalty <= 1.0:
            raise ValueError(f"the interference penalty must be within [0, 1], not {penalty}")
        self.table = table
        self.penalty = penalty
        self.planner_price = planner_price
        self._available = table.available()
        self._planner: dict[str, float] = {}

    def factor(self, parts: int) -> float:
        """What each part keeps of its score when `parts` parts are answered in one call."""
        return max(0.0, 1.0 - self.penalty * (parts - 1))

    def planner_cost(self, composite: Composite) -> float:
        """USD of the planner call that splits `composite` into its parts (estimated tokens)."""
        if composite.key not in self._planner:
            text = text_of(composite, self.table)
            prompt = sum(estimate_tokens(m["content"]) for m in plan_messages(text))
            subtasks = [
                {"id": f"s{n}", "text": text_of(p, self.table) if isinstance(p, Composite) else self.table.prompts[p],
                 "depends_on": [], "primitive": "direct"}
                for n, p in enumerate(composite.parts, 1)
            ]  # fmt: skip
            reply = estimate_tokens(json.dumps({"subtasks": subtasks}))
            price = self.planner_price
            self._planner[composite.key] = (prompt * price["input_per_mtok"] + reply * price["output_per_mtok"]) / 1e6
        return self._planner[composite.key]

    def delegate_matrix(self, composites: Sequence[Composite]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """[n_composites, n_pairs] each: the delegated score (mean over leaves, with the
        penalty), cost, and whether the pair was recorded on every leaf."""
        n, m = len(composites), self.table.n_pairs
        score, cost, ok = np.zeros((n, m)), np.zeros((n, m)), np.zeros((n, m), dtype=bool)
        for c, composite in enumerate(composites):
            leaves = list(composite.leaves())
            ok[c] = self._available[leaves].all(axis=0)
            score[c] = np.nan_to_num(self.table.score[leaves]).mean(axis=0) * self.factor(len(leaves))
            cost[c] = np.nan_to_num(self.table.cost[leaves]).sum(axis=0)
        return score, cost, ok

    def outcome(self, composite: Composite, plan: Plan) -> Outcome:
        total, cost, calls, violations = self._walk(composite, plan)
        return Outcome(total / len(composite.leaves()), cost, calls, violations, isinstance(plan, Decompose))

    def _walk(self, composite: Composite, plan: Plan) -> tuple[float, float, int, int]:
        """(sum of leaf scores, cost, calls, violations) of one plan for one composite."""
        if isinstance(plan, Delegate):
            leaves = list(composite.leaves())
            made = (*plan.tried, *((plan.col,) if plan.col >= 0 else ()))
            if not self._available[np.ix_(leaves, made)].all():
                return (
                    0.0,
                    float(np.nanmax(self.table.cost[leaves], axis=1).sum()) * len(made),
                    len(made),
                    len(leaves),
                )
            factor = self.factor(len(leaves)) if plan.col >= 0 else 0.0  # no answer taken: none right
            return (
                float(self.table.score[leaves, plan.col].sum() * factor),
                float(self.table.cost[np.ix_(leaves, made)].sum()),
                len(made),
                0,
            )
        if len(plan.parts) != len(composite.parts):
            raise ValueError(f"{composite.key}: a plan of {len(plan.parts)} parts for {len(composite.parts)}")
        total, cost, calls, violations = 0.0, self.planner_cost(composite), 1, 0
        for part, choice in zip(composite.parts, plan.parts, strict=True):
            if isinstance(part, Composite):
                if isinstance(choice, int | Solve):
                    raise ValueError(f"{part.key} is a composite: its plan must be a Delegate or Decompose")
                s, c, k, v = self._walk(part, choice)
            elif isinstance(choice, int | Solve):
                s, c, k, v = self._solve(part, choice if isinstance(choice, Solve) else Solve(choice))
            else:
                raise ValueError(f"part {part} of {composite.key} is an item: its plan is a column or a Solve")
            total, cost, calls, violations = total + s, cost + c, calls + k, violations + v
        return total, cost, calls, violations

    def _solve(self, row: int, solve: Solve) -> tuple[float, float, int, int]:
        calls = [*solve.tried, *((solve.col,) if solve.col >= 0 else ())]
        if not self._available[row, calls].all():
            return 0.0, float(np.nanmax(self.table.cost[row])) * len(calls), len(calls), 1
        score = float(self.table.score[row, solve.col]) if solve.col >= 0 else 0.0  # no answer taken
        return score, float(self.table.cost[row, calls].sum()), len(calls), 0


def planner_price(
    prices: Mapping[str, Mapping[str, float]], model: str | None, table: OutcomeTable
) -> tuple[str, Mapping[str, float]]:
    """The planner model and its price: `model`, else the table's cheapest priced model."""
    if model is not None:
        if model not in prices:
            raise ValueError(f"the planner {model!r} has no price in the price table")
        return model, prices[model]
    priced = [m for m in sorted({m for m, _ in table.pairs}) if m in prices]
    if not priced:
        raise ValueError("no model of the table has a price: give --prices")
    cheapest = min(priced, key=lambda m: (prices[m]["input_per_mtok"] + prices[m]["output_per_mtok"], m))
    return cheapest, prices[cheapest]
