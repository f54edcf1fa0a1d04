"""The default policy: a configured pair for every node, the planner for decomposable tasks.

- A composite task (its metadata lists recorded `items`) is split into one subtask per
  item, with no planner call: the items are the plan; a nested composite part is split
  again (`composite.items`).
- Another decomposable task is planned once with the planner pair; if the planner fails,
  the task is solved directly.
- A ready node is solved with the preferred pair: the first of `pairs` in the config that
  is admissible (and, for a recorded item, recorded for it), else the cheapest admissible
  by its endpoint's prices (endpoints without prices come last).
- With best-of-N (`observation.best_of` > 1 and a `reward_model` in the config), the
  fresh root's first N candidates, in the order above, are scored by OrchRM and only the
  top one is solved; the candidates and their rewards are noted on the root.
- A failed attempt is retried on the same pair up to `retries` times when its error was
  transient, then repaired with the next pair not yet tried. The engine gives up on a
  node after its attempt limit.
- An aggregate node is aggregated as soon as it is ready; the run finishes with the root's
  answer once the root has one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from orchestrator.composite.items import node_items, recorded_pairs, subtasks
from orchestrator.core.actions import part_label
from orchestrator.core.envelope import ENDPOINT_ERRORS, TRANSIENT_ERRORS
from orchestrator.core.protocol import (
    Action,
    Aggregate,
    Cancel,
    Decompose,
    Finish,
    NodeView,
    Observation,
    Pair,
    PairRef,
    Plan,
    Repair,
    Replan,
    Solve,
    Wait,
)
from orchestrator.policies import register
from orchestrator.policies.best_of import Embedder, PlanScorer, best_of_note

MAX_REPLANS = 1  # new plans of a decomposed task after its first; then it is solved directly


@dataclass(frozen=True)
class DefaultConfig:
    """How the default policy picks pairs."""

    pairs: tuple[tuple[int, str], ...] = ()  # preferred (endpoint id, primitive), in order
    planner: tuple[int, str] | None = None  # the pair that plans; default: the first preferred
    retries: int = 1  # same-pair retries of a transient failure
    reward_model: str | None = None  # OrchRM checkpoint that picks among best-of-N candidates

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> DefaultConfig:
        pairs = tuple((int(e), str(p)) for e, p in config.get("pairs", ()))
        planner = config.get("planner")
        reward_model = config.get("reward_model")
        return cls(
            pairs=pairs,
            planner=(int(planner[0]), str(planner[1])) if planner else None,
            retries=int(config.get("retries", 1)),
            reward_model=str(reward_model) if reward_model else None,
        )


def _price(pair: Pair) -> float:
    """Input plus output $/M tokens; an unknown price sorts last (unknown is not free)."""
    if pair.input_cost_per_mtok is None and pair.output_cost_per_mtok is None:
        return math.inf
    return (pair.input_cost_per_mtok or 0.0) + (pair.output_cost_per_mtok or 0.0)


class DefaultPolicy:
    name = "default"
    reviews_answers = False  # a node succeeds with its first answer

    def __init__(self, config: DefaultConfig, *, embedder: Embedder | None = None) -> None:
        self.config = config
        self.scorer = PlanScorer(config.reward_model, embedder=embedder) if config.reward_model else None

    def act(self, observation: Observation) -> Action:
        root = observation.root
        if root.status == "succeeded":
            return Finish(root.answer or "")
        recovery = self.recover(observation)
        if recovery is not None:
            return recovery
        for node in observation.nodes:
            action = self._act_on(node, observation)
            if action is not None:
                return action
        return Wait()

    # --- recovery ---

    def recover(self, observation: Observation) -> Action | None:
        """A decomposed node one of whose parts is lost (failed after its repairs, or left with
        no pair to try): its parts still in flight are cancelled at once, without waiting for
        them, then the node is replanned: planned anew with what went wrong (`MAX_REPLANS`
        times), after that solved directly. The deepest such node first."""
        for node in reversed(observation.nodes):
            if node.status != "running":
                continue
            parts = observation.parts(node.key)
            lost = [p for p in parts if self.lost(p, observation)]
            if not lost:
                continue
            busy = [
                p for p in parts
                if p.status != "cancelled" and (p.in_flight or any(n.in_flight for n in observation.under(p.key)))
            ]  # fmt: skip
            if busy:
                return Cancel(busy[0].key, reason=f"{lost[0].key} failed: {node.key} is replanned")
            told = [p for p in lost if p.kind != "aggregate"] or lost  # an aggregate skipped says nothing more
            return Replan(node.key, feedback="; ".join(failure(p) for p in told))
        return None

    def lost(self, node: NodeView, observation: Observation) -> bool:
        """A part that will not succeed as things stand: failed (or skipped, an aggregate whose
        part failed), or ready after failed attempts with no pair left to try."""
        if node.status == "failed" or (node.kind == "aggregate" and node.status == "skipped"):
            return True
        stuck = node.status == "ready" and not node.in_flight and node.attempts
        return bool(stuck) and self._solve(node, observation) is None

    def _act_on(self, node: NodeView, observation: Observation) -> Action | None:
        if node.status != "ready" or node.in_flight:
            return None
        if node.kind == "aggregate":
            return self._aggregate(node, observation)
        items = node_items(node, observation)
        replans = int(node.metadata.get("replans", 0))
        if items and not replans:  # after a replan, a composite's own parts are not a new plan
            return Decompose(node.key, subtasks(items))
        if node.kind == "root" and observation.decomposable and not items:
            if node.plan is not None:
                return Decompose(node.key, node.plan)
            if not node.plan_failed and not node.attempts and replans <= MAX_REPLANS:
                planner = self._planner(observation)
                if planner is not None:
                    return Plan(node.key, planner)
        return self._solve(node, observation)

    def _aggregate(self, node: NodeView, observation: Observation) -> Action:
        """Compose the parts' answers: with a model (the cheapest admissible `aggregate` pair),
        except for a composite of recorded items, whose answer stays part by part."""
        parent = observation.node(node.parent or "")
        composite = parent is not None and bool(node_items(parent, observation))
        pairs = [] if composite else self._candidates(node, observation)
        if not pairs or node.attempts:
            return Aggregate(node.key)  # no model for it, or its call failed: compose them as they are
        return Solve(node.key, pairs[0])

    def _solve(self, node: NodeView, observation: Observation) -> Action | None:
        candidates = self._candidates(node, observation)
        last = node.last_attempt
        if last is None:
            n = self.best_of(node, observation)
            if candidates and n > 1:
                by_ref = {pair.ref: pair for pair in observation.pairs}
                proposals = [by_ref[ref] for ref in candidates[:n]]
                return self.solve_best_of(node, observation, proposals, sampler="preference order")
            return Solve(node.key, candidates[0]) if candidates else None
        same_pair_tries = sum(1 for a in node.attempts if a.pair == last.pair)
        if last.error_kind in TRANSIENT_ERRORS and same_pair_tries <= self.config.retries:
            return Solve(node.key, last.pair)
        tried = {a.pair for a in node.attempts}
        untried = [ref for ref in candidates if ref not in tried]
        return Repair(node.key, untried[0]) if untried else None

    def _candidates(self, node: NodeView, observation: Observation) -> list[PairRef]:
        """Admissible pairs in order of preference; for a recorded item or prompt, recorded pairs
        (for a composite node, the pairs recorded on all its items). An aggregate node is
        solved only by `aggregate` pairs, any other node by neither them nor `plan` pairs."""
        items = node_items(node, observation)
        recorded = recorded_pairs(items) if items else node.metadata.get("recorded_pairs")
        allowed = list(observation.pairs)
        if recorded is not None:
            # A recorded item or prompt is answered by its recordings. One that no recording
            # answers (the recordings were looked up: an empty list) goes to the pool's live
            # endpoints (a real model, the local one), for a replay pair would only fail. If
            # neither kind is admissible here, try the others anyway, so the run fails with
            # replay's own clear error.
            on_record = [p for p in allowed if [p.model.removeprefix("replay/"), p.ref.primitive] in recorded]
            live = [p for p in allowed if not p.model.startswith("replay/")]
            allowed = on_record or live or allowed
        # An endpoint that refused the key, does not know the model or cannot take the prompt
        # on this node fails the same way with its other primitives: they are not tried.
        refused = {a.pair.endpoint_id for a in node.attempts if a.error_kind in ENDPOINT_ERRORS}
        allowed = [pair for pair in allowed if pair.ref.endpoint_id not in refused]
        inputs = observation.task_metadata if node.kind == "root" else node.metadata
        missing = set() if inputs.get("tests") else {"reflexion"}  # it runs the task's unit tests
        if not inputs.get("candidate") and not any(a.status == "ok" for a in node.attempts):
            missing.add("verify")  # a critic: with no answer yet (no attempt's, none given) nothing to judge
        # A live pair whose primitive lacks its input would fail before calling the model.
        # Replay's recorded outcomes of these primitives answer items, as recorded.
        allowed = [p for p in allowed if p.ref.primitive not in missing or p.model.startswith("replay/")]
        if node.kind == "aggregate":
            allowed = [pair for pair in allowed if pair.ref.primitive == "aggregate"]
        else:  # planning, or composing answers, is not a way to solve a node
            allowed = [pair for pair in allowed if pair.ref.primitive not in ("plan", "aggregate")]
        by_ref = {pair.ref: pair for pair in allowed}
        preferred = [PairRef(e, p) for e, p in self.config.pairs if PairRef(e, p) in by_ref]
        rest = sorted((p for p in allowed if p.ref not in preferred), key=lambda p: (_price(p), p.ref.endpoint_id))
        return preferred + [pair.ref for pair in rest]

    # --- best-of-N ---

    def lam(self, observation: Observation) -> float:
        """The run's cost preference λ (0, accuracy only, when it names none)."""
        return float(observation.cost_preference) if observation.cost_preference is not None else 0.0

    def best_of(self, node: NodeView, observation: Observation) -> int:
        """How many candidate plans to score for this node: N for a fresh root with a reward model, else 1."""
        fresh_root = node.kind == "root" and not node.attempts and not node.in_flight
        return observation.best_of if fresh_root and self.scorer is not None else 1

    def solve_best_of(self, node: NodeView, observation: Observation, proposals: list[Pair], *, sampler: str) -> Solve:
        """Solve the node with the proposal OrchRM rewards most, noting every proposal's reward."""
        assert self.scorer is not None
        domain = node.domain or observation.domain
        lam = self.lam(observation)
        rewards = self.scorer.score(node.text, domain, proposals, lam=lam)
        note = best_of_note(observation.best_of, lam, proposals, rewards, sampler=sampler)
        return Solve(node.key, proposals[int(np.argmax(rewards))].ref, note=note)

    def _planner(self, observation: Observation) -> PairRef | None:
        wanted = self.config.planner or (self.config.pairs[0] if self.config.pairs else None)
        if wanted is not None:
            ref = PairRef(wanted[0], "plan")
            if observation.admissible(ref):
                return ref
        planners = [pair.ref for pair in observation.pairs if pair.ref.primitive == "plan"]
        return planners[0] if planners else None


def failure(node: NodeView) -> str:
    """What went wrong with a part, for the planner's next try."""
    kinds = ", ".join(sorted({a.error_kind or a.status for a in node.attempts if a.status != "ok"})) or node.status
    return f"part {part_label(node.key)} ({node.text[:200]!r}) failed: {kinds}"


@register("default")
def make_default(config: Mapping[str, Any]) -> DefaultPolicy:
    return DefaultPolicy(DefaultConfig.from_mapping(config), embedder=config.get("embedder"))
