"""Best-of-N over composite plans at run time, decomposed plans among them.

For a fresh composite root (its metadata's `items`) with best-of-N and a reward model, the
learned policy draws N whole plans as `evaluate_rm_composite` samples them: each composite
node split or solved whole by a draw from the decompose head's probability at λ (split where
no pair can take all its parts), each recorded part's pair drawn from the pair softmax at λ.
OrchRM scores each plan node by node (`composite.rm.node_scores` offline): the mean over
its recorded parts of the probability that the pair answering the part is right (its one-node
plan's accuracy reward, Platt-scaled as the checkpoint records, `RewardModel.platt`) less a
weight times that pair's estimated cost on the part, in the policy's units: the run's λ, or
the config's `best_of_cost` where it sets one (`evaluate_rm_composite` fits one that keeps
the picks at the policy's own plans' estimated cost on the train composites). The top plan
is carried out: the root's choice now, each part's when the part comes up (its metadata's
`planned`), so a replayed step decides the same. A part whose planned pair is not admissible
any more, a repair and a replan are the policy's own choices again.

A plan, as notes and metadata hold it: `{"pair": [endpoint_id, primitive]}` for a recorded
part, `{"solve": [endpoint_id, primitive]}` for a node solved whole, `{"split": [plan, ...]}`
for a node split into its parts.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from orchestrator.composite.items import subtasks, text_of_items
from orchestrator.core.items import is_composite
from orchestrator.core.protocol import Action, Decompose, NodeView, Observation, PairRef, Solve, SubtaskSpec

if TYPE_CHECKING:
    from orchestrator.policies.learned import LearnedPolicy

PLANNED = "planned"  # a part's metadata: the plan best-of-N chose for it
SAMPLER = "decompose head and pair softmax at λ"


@dataclass
class Part:
    """A recorded part: its view as a node, its admissible pairs, the policy's softmax over them
    and their estimated costs on it (the policy's units)."""

    view: NodeView
    refs: list[PairRef]
    probs: np.ndarray
    cost: np.ndarray


@dataclass
class Node:
    """A composite node: the pair that would solve it whole (None: none can) and the head's
    probability of splitting it."""

    delegate: PairRef | None
    p_split: float
    parts: list[Node | Part]


def part_view(leaf: Mapping[str, Any]) -> NodeView:
    """A recorded part as a node of its own, as the policy scores its pairs on it."""
    return NodeView(
        key=f"part:{leaf.get('item_id')}", kind="subtask", text=str(leaf["prompt"]), status="ready", depth=1,
        item_id=str(leaf.get("item_id")), metadata=leaf, domain=str(leaf.get("domain") or ""),
    )  # fmt: skip


def tree(policy: LearnedPolicy, text: str, items: Sequence[Mapping[str, Any]], observation: Observation) -> Node:
    """What the policy makes of a composite node and, below it, of every part."""
    by_ref = {pair.ref: pair for pair in observation.pairs}
    parts: list[Node | Part] = []
    for entry in items:
        if is_composite(entry):
            parts.append(tree(policy, text_of_items(entry["items"]), entry["items"], observation))
            continue
        view = part_view(entry)
        candidates = [by_ref[ref] for ref in policy._candidates(view, observation)]
        episode = policy.episode(view, observation, candidates)
        probs = torch.softmax(policy.logits(view, observation, candidates, episode).double(), dim=-1).numpy()
        cost = episode.batch.cost_est[0, [episode.column(pair.ref) for pair in candidates]].double().numpy()
        parts.append(Part(view, [pair.ref for pair in candidates], probs / probs.sum(), cost))
    node = NodeView(key="composite", kind="subtask", text=text, status="ready", depth=1)
    return Node(policy.delegate_pair(items, observation), policy.split_probability(node, observation, items), parts)


def draw(node: Node, rng: np.random.Generator) -> dict[str, Any]:
    """One plan of `node`: split or whole by the head's probability, each part's pair from its softmax."""
    if node.delegate is not None and rng.random() >= node.p_split:
        return {"solve": [node.delegate.endpoint_id, node.delegate.primitive]}
    plans: list[dict[str, Any]] = []
    for part in node.parts:
        if isinstance(part, Node):
            plans.append(draw(part, rng))
        elif part.refs:
            ref = part.refs[int(rng.choice(len(part.refs), p=part.probs))]
            plans.append({"pair": [ref.endpoint_id, ref.primitive]})
        else:
            plans.append({})  # no admissible pair: the policy's own choice then fails clearly
    return {"split": plans}


def calls(node: Node, plan: Mapping[str, Any]) -> list[tuple[Part, PairRef]]:
    """(part, the pair answering it) for every recorded part under `node` in `plan`."""
    if "solve" in plan:
        ref = PairRef(*plan["solve"])
        return [(part, ref) for part in leaves_of(node)]
    out: list[tuple[Part, PairRef]] = []
    for part, sub in zip(node.parts, plan["split"], strict=True):
        if isinstance(part, Node):
            out += calls(part, sub)
        elif sub:
            out.append((part, PairRef(*sub["pair"])))
    return out


def leaves_of(node: Node) -> list[Part]:
    return [leaf for part in node.parts for leaf in (leaves_of(part) if isinstance(part, Node) else [part])]


def choose(
    policy: LearnedPolicy, root: NodeView, observation: Observation, items: Sequence[Mapping[str, Any]]
) -> Action:
    """The root's action under the best of N plans, each plan and its score noted on the root."""
    assert policy.scorer is not None
    n, lam = observation.best_of, policy.lam(observation)
    weight = policy.learned.best_of_cost if policy.learned.best_of_cost is not None else lam
    top = tree(policy, root.text, items, observation)
    rng = np.random.default_rng(zlib.crc32(root.text.encode()))  # a replayed step draws the same
    plans = [draw(top, rng) for _ in range(n)]
    each = [calls(top, plan) for plan in plans]
    value = {}  # (part, pair) -> (OrchRM's probability that the pair is right on it, λ·estimated cost)
    a, b = policy.scorer.model.platt
    by_ref = {pair.ref: pair for pair in observation.pairs}
    for part in leaves_of(top):
        used = sorted({ref for answered in each for p, ref in answered if p is part and ref in by_ref},
                      key=lambda r: (r.endpoint_id, r.primitive))  # fmt: skip
        if not used:
            continue
        reward = policy.scorer.score(part.view.text, part.view.domain or "", [by_ref[r] for r in used], lam=0.0)
        for ref, r in zip(used, reward, strict=True):
            value[id(part), ref] = (1 / (1 + np.exp(-(a * r + b))), weight * float(part.cost[part.refs.index(ref)]))
    rows, scores = [], []
    for plan, answered in zip(plans, each, strict=True):
        known = [value.get((id(p), ref), (0.0, 0.0)) for p, ref in answered]
        right = float(np.mean([k[0] for k in known])) if known else 0.0
        spend = float(np.mean([k[1] for k in known])) if known else 0.0
        scores.append(right - spend)
        rows.append({"plan": plan, "right": right, "lam_cost": spend, "score": right - spend,
                     "decomposed": "split" in plan})  # fmt: skip
    chosen = int(np.argmax(scores))
    note = {"best_of": {"n": n, "lam": lam, "cost_weight": weight, "sampler": SAMPLER, "candidates": rows,
                        "chosen": chosen, "executed": 1, "scoring_tokens": 0}}  # fmt: skip
    return act(root.key, plans[chosen], items, note=note)


def act(key: str, plan: Mapping[str, Any], items: Sequence[Mapping[str, Any]], *, note: Mapping[str, Any] | None = None
        ) -> Action:  # fmt: skip
    """Carry out `plan` on the composite node `key` (holding `items`): solve it whole, or split
    it with each part's own plan in its metadata."""
    if "solve" in plan:
        return Solve(key, PairRef(*plan["solve"]), note=note or {})
    specs = [
        SubtaskSpec(
            spec.id,
            spec.text,
            spec.depends_on,
            spec.primitive,
            spec.item_id,
            {**spec.metadata, PLANNED: sub} if sub else spec.metadata,
        )  # fmt: skip
        for spec, sub in zip(subtasks(items), plan["split"], strict=True)
    ]
    return Decompose(key, tuple(specs), note=note or {})


def planned_pair(node: NodeView, observation: Observation) -> PairRef | None:
    """A recorded part's pair in the plan best-of-N chose, while it is admissible."""
    plan = node.metadata.get(PLANNED)
    if not isinstance(plan, Mapping) or "pair" not in plan:
        return None
    ref = PairRef(*plan["pair"])
    return ref if any(pair.ref == ref for pair in observation.pairs) else None


def follow(node: NodeView, observation: Observation, items: Sequence[Mapping[str, Any]]) -> Action | None:
    """A nested composite part's action in the chosen plan; None where it has none, or its
    pair is not admissible any more."""
    plan = node.metadata.get(PLANNED)
    if not isinstance(plan, Mapping) or not ("solve" in plan or "split" in plan):
        return None
    if "solve" in plan and not any(pair.ref == PairRef(*plan["solve"]) for pair in observation.pairs):
        return None
    if "split" in plan and len(plan["split"]) != len(items):
        return None
    return act(node.key, plan, items)
