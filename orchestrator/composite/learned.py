"""The learned policy on composites: its decompose head decides at every composite node, its
pair scorer routes each part, or picks the one pair for a node it delegates.

- **Parts** are items: each is routed as the policy routes any item (`LearnedMethod.route`:
  greedy episodes, or the agreement cascade at a cascade knob), its extra calls paid.
- **Delegating** a node: the pair worth most over the node's items by the estimates the
  pair scorer reads (`episode.estimated_worth`: the per-item accuracy estimate, times the
  interference factor, less λ times the estimated cost, summed over the items), among the
  pairs recorded on all of them. The pair scorer's own choice is made per item: its softmax
  ranks pairs for one item and says little about a pair's chances on several at once (it
  puts an item's mass on the cheapest of its good pairs, so the product over a math and a
  code item picks a cheap pair right on one only), and a composite's own text is never its
  training data.
- **Deciding**: the decompose head, on the node's text (task features of its embedding, its
  one domain or none) and λ. A node that no single pair can take whole (a cross-source
  composite) is decomposed.

`fit` trains the policy on the train composites' items (once per item set and seed: the
penalty does not change it), then the head in two stages (`learning.decompose`):
- SFT on both-sign targets: at each λ of the sweep, every train composite node (roots and
  nested parts) is valued both ways under the policy's own choices, scored and costed from
  the records (`CompositeCosting`): decomposed (the planner call, then each part as routed,
  a nested part by whichever of its options is worth more) and delegated. The target is 1
  where decomposing is worth more (score − λ·cost summed over the node's items, cost in
  units of the dearest pair's mean cost per item on the train items), weighted by the
  difference plus a floor (`DecomposeConfig.weight_floor`). Single train items enter as
  "do not" (a planner call cannot help one part).
- GRPO over whole composite episodes: decisions sampled at the root and, once it splits,
  at its nested parts, each episode scored as a plan (mean score − λ·cost per item).

The train items' routes are what training saw: their features leave-one-out (kNN) and
out-of-fold (predictor). The policy was still fit on their outcomes, which flatters the
decomposed option a little; the evaluation reports the head's agreement with the better
option on the test composites, where nothing was fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from orchestrator.baselines.common import pair_cost
from orchestrator.composite.build import Composite, build_composites, domain_of, text_of
from orchestrator.composite.outcome import CompositeCosting, Decompose, Delegate, Plan, Solve, planner_price
from orchestrator.learning.decompose import (
    DecisionEpisodes,
    encoded,
    fit_decompose_head,
    train_decompose_rl,
)
from orchestrator.learning.episode import estimated_worth
from orchestrator.learning.features import task_features
from orchestrator.learning.method import LearnedMethod, route_batch
from orchestrator.routing.methods import CASCADE_OFFSET, Routes
from orchestrator.routing.table import OutcomeTable

SINGLE_NEGATIVES = 500  # single train items per λ entered as "do not decompose"


def nodes_of(composites: Sequence[Composite]) -> list[Composite]:
    """Every composite node: each root, then its nested parts, depth first."""
    out: list[Composite] = []

    def walk(c: Composite) -> None:
        out.append(c)
        for part in c.parts:
            if isinstance(part, Composite):
                walk(part)

    for c in composites:
        walk(c)
    return out


def solves(routes: Routes) -> list[Solve]:
    """Each item's calls as a `Solve`: the column that answers, after the ones tried before it."""
    return [
        Solve(final, tuple(j for j in executed if j != final))
        for executed, final in zip(routes.executed, routes.final, strict=True)
    ]


class Choices:
    """What the policy would do at one knob, for composites of one table: each leaf's calls,
    each node's delegate pair (None where no pair is recorded on all its items) and its
    decision (True: decompose)."""

    def __init__(self, leaves: Mapping[int, Solve], pairs: Mapping[str, int | None], split: Mapping[str, bool]):
        self.leaves, self.pairs, self.split = leaves, pairs, split

    def plan(self, c: Composite, split: Mapping[str, bool] | None = None) -> Plan:
        """The plan of `c` under these choices (`split` overrides the decisions by node key)."""
        decide = split if split is not None else self.split
        pick = self.pairs[c.key]
        if pick is not None and not decide[c.key]:
            return Delegate(pick)
        return Decompose(tuple(self.plan(p, split) if isinstance(p, Composite) else self.leaves[p] for p in c.parts))


class LearnedComposite:
    """The learned policy deciding and routing composites (see the module docstring)."""

    name = "learned"

    def __init__(self, config: Mapping[str, Any] | None = None, *, embedder: Any = None):
        self.method = LearnedMethod(config, embedder=embedder)
        self.decompose = self.method.config.decompose
        self.knobs: tuple[float, ...] = self.method.knobs
        self.metrics: dict[str, float] = {}
        self.head = True  # False: every composite split (the head off, for an ablation)
        self._fitted: tuple[tuple[int, ...], int, dict[str, torch.Tensor]] | None = None
        self._tasks: dict[str, np.ndarray] = {}

    # --- fitting ---

    def fit(
        self, costing: CompositeCosting, train_rows: Sequence[int], train: Sequence[Composite], *, seed: int
    ) -> None:
        rows = sorted({int(r) for r in train_rows})
        if self._fitted is None or self._fitted[:2] != (tuple(rows), seed):
            # The policy does not depend on the costing's penalty: one fit serves every penalty,
            # and each head fit starts from the same weights.
            self.method.fit(costing.table.rows(rows), seed=seed)
            head = {k: v.clone() for k, v in self._net.state_dict().items() if "decompose_head" in k}
            self._fitted = (tuple(rows), seed, head)
        self._net.load_state_dict(self._fitted[2], strict=False)
        self.fit_head(costing, rows, train, seed=seed)

    def fit_head(
        self, costing: CompositeCosting, rows: Sequence[int], train: Sequence[Composite], *, seed: int
    ) -> None:
        """The decompose head's two stages on the train composites, for the policy fitted on the
        items `rows` of `costing.table` (by `fit`, or adopted: `LearnedMethod.adopt`)."""
        table = costing.table
        self._costing = costing
        rows = sorted(rows)
        raw = pair_cost(table.rows(rows))
        finite = raw[np.isfinite(raw)]
        self._scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        lams = tuple(float(k) for k in self.method.config.knobs)
        train_items, train_batch = self.method.episodes()
        position = {row: n for n, row in enumerate(rows)}
        nodes = nodes_of(train)
        choices = [self._train_choices(nodes, train_items, train_batch, position, lam) for lam in lams]
        self.metrics = dict(self.method.metrics)
        self.metrics |= self._fit_sft(nodes, choices, lams, rows, seed)
        self.metrics |= self._fit_rl(train, choices, lams, seed)

    @property
    def _net(self) -> Any:
        assert self.method.net is not None, "fit first"
        return self.method.net

    def _node_tasks(self, nodes: Sequence[Composite]) -> np.ndarray:
        """[n, T] task features of the nodes' texts (embedded once per node)."""
        table = self._costing.table
        missing = [c for c in nodes if c.key not in self._tasks]
        if missing:
            emb = np.asarray(self.method.embedder([text_of(c, table) for c in missing]), dtype=np.float32)
            feats = task_features(emb, [domain_of(c, table) for c in missing])
            self._tasks |= {c.key: f for c, f in zip(missing, feats, strict=True)}
        return np.stack([self._tasks[c.key] for c in nodes])

    def _train_choices(
        self, nodes: Sequence[Composite], items: OutcomeTable, batch: Any, position: Mapping[int, int], lam: float
    ) -> Choices:
        """The policy's choices on the train composites at λ, from the training items' episodes."""
        routes = route_batch(self._net, batch.rows(torch.arange(items.n_items)), items, lam, max_steps=self._steps)
        solve = solves(routes)
        leaves = {leaf: solve[position[leaf]] for c in nodes for leaf in c.leaves()}
        pairs = {c.key: self._delegate(batch, [position[leaf] for leaf in c.leaves()], c, lam) for c in nodes}
        return Choices(leaves, pairs, {})

    @property
    def _steps(self) -> int:
        return self.method.config.sft.max_steps

    def _delegate(self, batch: Any, at: list[int], c: Composite, lam: float) -> int | None:
        """The pair of most estimated worth over `c`'s items (rows `at` of the episodes
        `batch`, at λ), among those recorded on every one; None where there is none."""
        ok = self._costing.table.available()[list(c.leaves())].all(axis=0)
        if not ok.any():
            return None
        factor = self._costing.factor(len(c.leaves()))
        worth = estimated_worth(batch.rows(torch.as_tensor(at)), lam, factor).sum(0).numpy()  # [P]
        return int(np.where(ok, worth, -np.inf).argmax())

    def _value(self, c: Composite, plan: Plan, lam: float) -> float:
        """Score − λ·cost over the node's items (cost in units of the dearest pair's per item)."""
        o = self._costing.outcome(c, plan)
        return o.score * len(c.leaves()) - lam * o.cost / self._scale

    def _options(self, c: Composite, choices: Choices, lam: float, best: dict[str, bool]) -> tuple[float, float | None]:
        """(decomposed, delegated) worth of `c`, nested parts at their better option, which
        `best` records (True: decompose)."""
        for part in c.parts:
            if isinstance(part, Composite) and part.key not in best:
                split, whole = self._options(part, choices, lam, best)
                best[part.key] = whole is None or split > whole
        split = self._value(c, choices.plan(c, {**best, c.key: True}), lam)
        pick = choices.pairs[c.key]
        whole = None if pick is None else self._value(c, Delegate(pick), lam)
        return split, whole

    def _fit_sft(
        self, nodes: Sequence[Composite], choices: Sequence[Choices], lams: Sequence[float], rows: list[int], seed: int
    ) -> dict[str, float]:
        tasks = self._node_tasks(nodes)
        index = {c.key: n for n, c in enumerate(nodes)}
        rng = np.random.default_rng([seed, 11])
        singles = rng.choice(rows, size=min(SINGLE_NEGATIVES, len(rows)), replace=False)
        single_tasks = self.method.episodes(self._costing.table.rows(singles))[1].task.numpy()
        at, lam_of, targets, weights = [], [], [], []
        for lam, found in zip(lams, choices, strict=True):
            best: dict[str, bool] = {}
            for c in nodes:
                split, whole = self._options(c, found, lam, best)
                if whole is None:
                    continue  # no choice to learn: it must decompose
                at.append(index[c.key])
                lam_of.append(lam)
                targets.append(float(split > whole))
                weights.append(abs(split - whole))
        node_weight = float(np.mean(weights)) if weights else 1.0
        weights = [w + self.decompose.weight_floor * node_weight + 1e-9 for w in weights]
        all_tasks = np.concatenate([tasks[at], np.tile(single_tasks, (len(lams), 1))])
        all_lams = np.concatenate([lam_of, np.repeat(lams, len(single_tasks))])
        all_targets = np.concatenate([targets, np.zeros(len(lams) * len(single_tasks))])
        all_weights = np.concatenate([weights, np.full(len(lams) * len(single_tasks), node_weight)])
        return fit_decompose_head(
            self._net, all_tasks, all_lams, all_targets, all_weights, config=self.decompose, seed=seed
        )

    def _fit_rl(
        self, train: Sequence[Composite], choices: Sequence[Choices], lams: Sequence[float], seed: int
    ) -> dict[str, float]:
        per_root = [nodes_of([c]) for c in train]
        flat = [node for nodes in per_root for node in nodes]
        starts = np.cumsum([0] + [len(nodes) for nodes in per_root])
        episodes = DecisionEpisodes(
            tasks=self._node_tasks(flat),
            nodes=[np.arange(lo, hi) for lo, hi in zip(starts[:-1], starts[1:], strict=True)],
            forced=np.asarray([choices[0].pairs[c.key] is None for c in flat]),
            lams=np.asarray(lams),
        )

        def score(task: int, li: int, decision: np.ndarray) -> tuple[float, int, np.ndarray]:
            nodes, lam = per_root[task], lams[li]
            split = {c.key: bool(d) for c, d in zip(nodes, decision, strict=True)}
            used = _decided(train[task], split)
            o = self._costing.outcome(train[task], choices[li].plan(train[task], split))
            n = len(train[task].leaves())
            return o.score - lam * o.cost / (self._scale * n), o.violations, np.asarray([c.key in used for c in nodes])

        return train_decompose_rl(self._net, episodes, score, config=self.decompose, seed=seed)

    # --- planning ---

    def plans(self, composites: Sequence[Composite], *, knob: float) -> list[Plan]:
        """Each composite's plan at a knob (`choices`): its parts routed through the core, its
        decisions and delegate pairs from the estimates with the costing's interference factor."""
        choices = self.choices(composites, knob=knob)
        return [choices.plan(c) for c in composites]

    def runs(self, composites: Sequence[Composite], *, knob: float) -> list[Plan]:
        """Each composite's plan as runs of the runtime policy through the core, all in lockstep
        (`offline.composite_shell`): what a live run decides. The runtime policy knows no
        interference, so with no penalty these are the plans `plans` gives."""
        from orchestrator.offline.composite_shell import route_composites

        lam = knob - CASCADE_OFFSET if knob >= CASCADE_OFFSET else knob
        policy = self.method.runtime_policy(
            lam, cascade=self.method.cascade_gate(knob), decides_composites=self.head
        )  # fmt: skip
        with torch.no_grad():
            return route_composites(self._costing.table, composites, policy, lam=lam)[0]

    def choices(self, composites: Sequence[Composite], *, knob: float) -> Choices:
        """The policy's choices on `composites` at a knob (a λ, or a cascade knob for the parts)."""
        table = self._costing.table
        lam = knob - CASCADE_OFFSET if knob >= CASCADE_OFFSET else knob
        nodes = nodes_of(composites)
        leaves = sorted({leaf for c in nodes for leaf in c.leaves()})
        items = table.rows(leaves)
        solve = dict(zip(leaves, solves(self.method.route(items, knob=knob)), strict=True))
        batch = self.method.episodes(items)[1]
        position = {leaf: n for n, leaf in enumerate(leaves)}
        pairs = {c.key: self._delegate(batch, [position[leaf] for leaf in c.leaves()], c, lam) for c in nodes}
        with torch.no_grad():
            hidden = encoded(self._net, self._node_tasks(nodes))
            logits = self._net.decompose_logit(hidden, torch.full((len(nodes),), lam, dtype=torch.float32))
        split = {
            c.key: bool(z > 0) or pairs[c.key] is None or not self.head for c, z in zip(nodes, logits, strict=True)
        }
        return Choices(solve, pairs, split)


def decision_agreement(learned: LearnedComposite, composites: Sequence[Composite], *, lam: float) -> float | None:
    """The share of the composite nodes with a choice (some pair recorded on all their items)
    where the head decided for the option worth more under the policy's own routes at λ (a
    tie is one call's): on test composites, where nothing was fit."""
    choices = learned.choices(composites, knob=lam)
    best: dict[str, bool] = {}
    agree = []
    for c in nodes_of(composites):
        split, whole = learned._options(c, choices, lam, best)
        if whole is not None:
            agree.append((split > whole) == choices.split[c.key])
    return float(np.mean(agree)) if agree else None  # no node had a choice


def _decided(c: Composite, split: Mapping[str, bool]) -> set[str]:
    """The nodes whose decision a plan of `c` under `split` actually reads."""
    out = {c.key}
    if split[c.key]:
        for part in c.parts:
            if isinstance(part, Composite):
                out |= _decided(part, split)
    return out


def train_composite_head(
    table: OutcomeTable,
    emb: np.ndarray,
    trained: tuple[Any, Any, Any, dict[str, float]],
    config: Any,
    *,
    seed: int,
    prices: Mapping[str, Mapping[str, float]],
    embedder: Any = None,
) -> tuple[dict[str, float], dict[str, Any]]:
    """Train the decompose head of a policy trained on every item of `table` (`trained`:
    `train_network`'s result, `config` its `LearnedConfig`) on `config.decompose.composites`
    composites of those items (penalty 0: no interference), the planner the cheapest priced
    model. Returns its metrics and what the checkpoint records of it (`composites`, by which
    the runtime policy knows its head decides composites)."""
    count = config.decompose.composites
    composites = build_composites(table, range(table.n_items), count=count, seed=seed)
    planner, price = planner_price(prices, None, table)
    learned = LearnedComposite(config.to_dict(), embedder=embedder)
    learned.method.adopt(table, emb, trained)
    learned.fit_head(CompositeCosting(table, planner_price=price), range(table.n_items), composites, seed=seed)
    metrics = {
        k: v for k, v in learned.metrics.items() if k.startswith(("decompose", "loss/decompose", "time/decompose"))
    }
    return metrics, {"count": count, "planner": planner, "seed": seed, "penalty": 0.0}
