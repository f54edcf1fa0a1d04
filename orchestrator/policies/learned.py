"""The learned policy at run time: a trained checkpoint picks the pair for every node.

It keeps the default policy's flow (aggregate nodes aggregated, transient errors retried,
the run finished with the root's answer) and replaces its choices:
- whether to split a composite task (or a nested part of one) into its recorded parts, or
  to solve it whole with the one pair of most estimated worth on all of them: the decompose
  head at λ, where the checkpoint's head was trained on composite decisions
  (`composite.learned`; else composites are split); a whole call that fails falls back to
  splitting;
- whether to plan another decomposable task: the same head (on plain items it has only
  ever been told "do not": no recorded run shows that planning one item pays);
- which admissible pair solves or repairs a node: the pair scorer, at the request's cost
  preference λ (`observation.cost_preference`) or the configured one / preset.

Best-of-N (`observation.best_of` = N > 1, with a `reward_model` in the config): for a
fresh root, N pairs are drawn from the softmax of the pair logits at the run's λ (without
replacement while untried pairs remain), OrchRM scores them, and only the top one is
solved; see `orchestrator.policies.best_of`.

Each choice is one step of the episode the evaluation plays for an item
(`learning.episode.step_logits`): the node's pair features come from the calibration the
checkpoint carries (the per-item accuracy from its nearest calibration items and its
predictor, for the node's text and domain), over the checkpoint's pairs, so a live decision
reads the features the evaluation reads. A repair after a failed attempt sees that attempt
as an executed pair with no answer. Pairs of the pool that the checkpoint never saw get the
pool's mean accuracy at their listed prices.

A pool the checkpoint never saw can bring its own calibration: its probe outcomes
(`calibration`, see `policies.learned_calibration`). The run is then calibrated on them, as
the unseen-pool evaluation calibrates on its probe (`LearnedMethod.calibrate`): the probe's
pairs are the columns, and only the pool's pairs the probe does not cover get the mean. The
network and its episode length stay the checkpoint's; its cascade gates, fit on the
checkpoint's pairs, are off.

Config: `checkpoint` (else $ORCHESTRA_POLICY_CHECKPOINT), `preset` (cheap / balanced /
best) or `cost_preference` (λ), `retries`, `reward_model` (an OrchRM checkpoint, for
best-of-N), `cascade`, `calibration` (the pool's probe outcomes), and optionally `embedder`
(a callable texts -> [n, 384] vectors; default `orchestrator.embedding.embed`, for tests
and benches).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from orchestrator.composite.items import domain_of, node_items, subtasks
from orchestrator.core.envelope import TRANSIENT_ERRORS
from orchestrator.core.items import leaves
from orchestrator.core.protocol import Accept, Action, Decompose, NodeView, Observation, Pair, PairRef, Repair, Solve
from orchestrator.filecache import load_once
from orchestrator.learning.calibration import item_accuracy, known_domains
from orchestrator.learning.episode import (
    BEST_UPTO,
    CEILING_FROM,
    binds_best,
    estimated_worth,
    preset_bound,
    reliability,
    step_logits,
)
from orchestrator.learning.features import task_features
from orchestrator.policies import learned_best_of, register
from orchestrator.policies.default import DefaultConfig, DefaultPolicy
from orchestrator.policies.learned_calibration import calibration_context
from orchestrator.policies.learned_cascade import Gate
from orchestrator.policies.learned_cascade import review as cascade_review
from orchestrator.policies.learned_episodes import NodeEpisode, Prepared, Request, node_episodes, prepare
from orchestrator.policies.learned_loading import (
    LearnedPolicyConfig,
    LoadedPolicy,
    load_policy,
    pair_columns,
)

KNN_MEMO = 64  # nodes whose per-item accuracy a policy keeps (a node is decided on several times)
Embedder = Callable[[list[str]], np.ndarray]


class LearnedPolicy(DefaultPolicy):
    name = "learned"
    reviews_answers = True  # accept an answer, or ask for a second opinion, as its episodes do

    def __init__(
        self, config: LearnedPolicyConfig, *, embedder: Embedder | None = None, loaded: LoadedPolicy | None = None
    ) -> None:
        super().__init__(DefaultConfig(retries=config.retries, reward_model=config.reward_model), embedder=embedder)
        self.learned = config
        # Made anew at every step of a run: the checkpoint is loaded once per version of its file
        # (or handed over loaded, by the evaluation, which holds the network it just trained).
        self.loaded = loaded or load_once("learned_policy", config.checkpoint, load_policy)
        self.net = self.loaded.net
        self.embedder = embedder
        if config.calibration is not None:  # the pool's own calibration, in place of the checkpoint's
            context = calibration_context(config.calibration, self._embedder(), key=config.calibration_key)
            self.loaded = replace(self.loaded, context=context, columns=pair_columns(context))
        self._knn: dict[tuple[str, str], np.ndarray] = {}
        self._prepared: dict[tuple[int, str], Prepared] = {}  # during `act_many`
        if config.cascade is True and not self.loaded.gates:
            raise ValueError(f"{config.checkpoint} carries no cascade gate (trained before they did): train it again")

    def act_many(self, observations: Sequence[Observation]) -> list[Action]:
        """`act` on each observation, the network's passes for all of them made at once first
        (`learned_episodes.prepare`): the actions `act` gives each one alone."""
        self._prepared = prepare(self, observations)
        try:
            return [self.act(observation) for observation in observations]
        finally:
            self._prepared = {}

    def _ready(self, node: NodeView, observation: Observation, candidates: Sequence[Pair]) -> Prepared | None:
        """The node's prepared episode, where `act_many` made it for these candidates."""
        found = self._prepared.get((id(observation), node.key))
        return found if found is not None and found.candidates == tuple(p.ref for p in candidates) else None

    # --- the two learned choices ---

    def _act_on(self, node: NodeView, observation: Observation) -> Action | None:
        items = node_items(node, observation)
        if (items or node.kind == "aggregate") and node.status == "answered" and not node.in_flight:
            # A composite solved whole (its answer part by part), or the parts' answers composed
            # by a model: taken as they are, with no second opinion.
            return Accept(node.key, max(a.number for a in node.attempts if a.status == "ok"))
        if node.status == "answered" and not node.in_flight:
            return self._review(node, observation)
        fresh = node.status == "ready" and not node.in_flight and not node.attempts
        replanned = bool(node.metadata.get("replans"))
        if items and fresh and self.loaded.decides_composites and not replanned:
            if self.best_of(node, observation) > 1:  # N whole plans, decomposed ones among them
                return learned_best_of.choose(self, node, observation, items)
            return learned_best_of.follow(node, observation, items) or self._composite(node, observation, items)
        plain_task = not observation.task_metadata.get("items") and node.plan is None
        fresh_root = node.kind == "root" and node.status == "ready" and not node.in_flight and not node.attempts
        planning = fresh_root and observation.decomposable and plain_task and not node.plan_failed
        if planning and not self._wants_decomposition(node, observation):
            return self._solve(node, observation)
        return super()._act_on(node, observation)

    def _composite(self, node: NodeView, observation: Observation, items: list[Mapping[str, Any]]) -> Action:
        """A node holding recorded parts (a composite task, or a nested part of one): split it
        into its parts, or solve it whole with one pair, as the decompose head says at λ. The
        pair is the one of most estimated worth on all the parts (`delegate_pair`); where no
        pair can take them all, it splits. `composite.learned` decides the same offline."""
        pair = self.delegate_pair(items, observation)
        # The node's domain is its items' one domain (or none), as the evaluation reads it.
        if pair is not None and not self._wants_decomposition(node, observation, domain=domain_of(items)):
            return Solve(node.key, pair)
        return Decompose(node.key, subtasks(items))

    def delegate_pair(self, items: Sequence[Mapping[str, Any]], observation: Observation) -> PairRef | None:
        """The pair whose estimated worth (`learning.episode.estimated_worth`: the per-item
        accuracy estimate less λ times the estimated cost), summed over every recorded part
        under `items`, is highest among the pairs each part may use; None where none may take
        them all."""
        lam = self.lam(observation)
        by_ref = {pair.ref: pair for pair in observation.pairs}
        total: torch.Tensor | None = None
        refs: list[PairRef | None] = []
        for leaf in leaves(items):
            view = learned_best_of.part_view(leaf)
            candidates = [by_ref[ref] for ref in self._candidates(view, observation)]
            episode = self.episode(view, observation, candidates)
            worth = estimated_worth(episode.batch, lam)[0]  # [P]
            total, refs = (worth if total is None else total + worth), episode.refs
        if total is None or not bool(torch.isfinite(total).any()):
            return None
        return refs[int(total.argmax())]

    def _solve(self, node: NodeView, observation: Observation) -> Action | None:
        planned = None if node.attempts else learned_best_of.planned_pair(node, observation)
        if planned is not None:  # the pair of the plan best-of-N chose
            return Solve(node.key, planned)
        items = node_items(node, observation)
        if items and not node.attempts:  # a composite solved whole: the pair worth most on all its parts
            pair = self.delegate_pair(items, observation)
            if pair is not None:
                return Solve(node.key, pair)
        last = node.last_attempt
        if last is not None and last.error_kind in TRANSIENT_ERRORS:
            same_pair_tries = sum(1 for a in node.attempts if a.pair == last.pair)
            if same_pair_tries <= self.config.retries:
                return Solve(node.key, last.pair)
        tried = {a.pair for a in node.attempts}
        by_ref = {pair.ref: pair for pair in observation.pairs}
        candidates = [by_ref[ref] for ref in self._candidates(node, observation) if ref not in tried]
        if not candidates:
            return None
        n = self.best_of(node, observation)
        if n > 1:
            logits = self.logits(node, observation, candidates)
            picks = sample_without_replacement(logits, n, seed=zlib.crc32(node.text.encode()))
            proposals = [candidates[i] for i in picks]
            return self.solve_best_of(node, observation, proposals, sampler="policy softmax")
        choice = self.choose(node, observation, candidates)
        return Repair(node.key, choice) if node.attempts else Solve(node.key, choice)

    def _review(self, node: NodeView, observation: Observation) -> Action:
        """An answered node: call another pair, or finish with the answer the reliability head
        trusts most (the next step of the episode, as `learning.episode.rollout` plays it)."""
        # Best-of-N chose the one pair to run among N scored plans (this node's, or the part's in
        # its chosen composite plan): its answer is the one.
        chosen = "best_of" in node.metadata or learned_best_of.PLANNED in node.metadata
        gate = self.cascade_gate(observation)
        if gate is not None and not chosen:
            action = cascade_review(self, node, observation, gate)
            if action is not None:
                return action
        tried = {a.pair for a in node.attempts}
        by_ref = {pair.ref: pair for pair in observation.pairs}
        candidates = [by_ref[ref] for ref in self._candidates(node, observation) if ref not in tried]
        prepared = self._ready(node, observation, candidates)
        episode = prepared.episode if prepared is not None else self.episode(node, observation, candidates)
        max_steps = self.loaded.max_steps
        if candidates and episode.steps < max_steps and not chosen:
            logits = prepared.logits if prepared is not None else self._step_logits(episode, observation)
            choice = int(logits[0].argmax())
            ref = episode.refs[choice] if choice < len(episode.refs) else None
            if ref is not None and ref in by_ref:
                return Solve(node.key, ref)  # a second opinion
        if prepared is not None:
            trust = prepared.trust
        else:
            with torch.no_grad():
                trust = reliability(self.net, episode.batch, episode.executed)[0]
        answered = {a.pair: a.number for a in node.attempts if a.status == "ok"}  # the latest per pair
        best = max(answered, key=lambda pair: float(trust[episode.column(pair)]) if pair in episode.refs else -1.0)
        return Accept(node.key, answered[best])

    def cascade_gate(self, observation: Observation) -> Gate | None:
        cascade = self.learned.cascade
        lam = self.lam(observation)
        if lam >= CEILING_FROM or (lam <= BEST_UPTO and self._binds_best()):
            return None  # a preset's bound holds the episode to its anchor pair: nothing to escalate to
        if self.learned.calibration is not None:
            return None  # the gates were fit on the checkpoint's pairs, not this pool's (`LearnedMethod.knobs`)
        if cascade is True:
            return self.loaded.gates[min(self.loaded.gates, key=lambda fit_at: abs(fit_at - lam))]
        return cascade if isinstance(cascade, Mapping) else None

    # --- scoring ---

    def _binds_best(self) -> bool:
        """Whether `best` is bound to the calibration's most accurate pair (`learning.episode.binds_best`)."""
        return binds_best(self.loaded.context.calibration.embeddings.shape[0])

    def lam(self, observation: Observation) -> float:
        pref = observation.cost_preference
        return float(pref) if pref is not None else self.learned.cost_preference

    def choose(self, node: NodeView, observation: Observation, candidates: Sequence[Pair]) -> PairRef:
        """The candidate with the highest pair logit, given the node's attempts so far."""
        return candidates[int(self.logits(node, observation, candidates).argmax())].ref

    def logits(
        self, node: NodeView, observation: Observation, candidates: Sequence[Pair], episode: NodeEpisode | None = None
    ) -> torch.Tensor:
        """[len(candidates)] the policy's logits of calling each candidate next, at the run's λ:
        one step of the episode the evaluation plays (`learning.episode.step_logits`; `episode`:
        the node's, where the caller has it)."""
        prepared = self._ready(node, observation, candidates) if episode is None else None
        if prepared is not None:
            episode, logits = prepared.episode, prepared.logits
        else:
            episode = episode or self.episode(node, observation, candidates)
            logits = self._step_logits(episode, observation)
        return logits[0, [episode.column(pair.ref) for pair in candidates]]

    def _step_logits(self, episode: NodeEpisode, observation: Observation) -> torch.Tensor:
        """[1, P + 1] the next step's logits of the node's episode at the run's λ (a node may try
        more pairs than an episode: its step counts as the last one's)."""
        lam = self.lam(observation)
        steps = min(episode.steps, self.loaded.max_steps - 1)
        with torch.no_grad():
            return step_logits(
                self.net, episode.batch, torch.tensor([lam], dtype=torch.float32), episode.executed, episode.last,
                steps, self.loaded.max_steps, bound=preset_bound(episode.batch, lam),
            )  # fmt: skip

    def wants_decomposition(self, observation: Observation) -> bool:
        return self._wants_decomposition(observation.root, observation)

    def split_probability(self, node: NodeView, observation: Observation, items: Sequence[Mapping[str, Any]]) -> float:
        """The decompose head's probability of splitting a composite node that holds `items`, at λ."""
        with torch.no_grad():
            return float(torch.sigmoid(self._decompose_logit(node, observation, domain_of(items))))

    def _wants_decomposition(self, node: NodeView, observation: Observation, *, domain: str | None = None) -> bool:
        return bool(self._decompose_logit(node, observation, domain).item() > 0)

    def _decompose_logit(self, node: NodeView, observation: Observation, domain: str | None) -> torch.Tensor:
        lam = torch.tensor([self.lam(observation)], dtype=torch.float32)
        emb = self._embed(node.text)
        if domain is None:  # a composite's is given: its parts' one domain, or none when they mix, as offline
            domain = known_domains(self.loaded.context.calibration, emb, [node.domain or observation.domain])[0]
        task = torch.from_numpy(task_features(emb, [domain]))
        with torch.no_grad():
            logit: torch.Tensor = self.net.decompose_logit(self.net.encode_task(task), lam)
        return logit

    def _embedder(self) -> Embedder:
        if self.embedder is None:
            from orchestrator.embedding import embed

            self.embedder = embed
        return self.embedder

    def _embed(self, text: str) -> np.ndarray:
        return self._embed_many([text])

    def _embed_many(self, texts: list[str]) -> np.ndarray:
        """[n, e] the texts' vectors."""
        return np.asarray(self._embedder()(texts), dtype=np.float32)

    def _item_accuracies(self, texts: list[str], domains: list[str], emb: np.ndarray, acc: np.ndarray) -> np.ndarray:
        """[n, p] the per-item accuracy of each pair from the nearest calibration items, in one
        pass for the nodes not met lately: the same for a node's every decision (its solve and
        each review), so kept for the last few nodes."""
        keys = list(zip(texts, domains, strict=True))
        found = {key: self._knn[key] for key in keys if key in self._knn}
        fresh = {key: k for k, key in enumerate(keys) if key not in found}  # a row of each
        if fresh:
            rows = np.fromiter(fresh.values(), dtype=np.int64)
            calib = self.loaded.context.calibration
            computed = item_accuracy(calib, emb[rows], [domains[k] for k in rows], acc[rows], exclude_self=False)
            found |= {key: computed[r : r + 1] for r, key in enumerate(fresh)}
        for key in keys[-KNN_MEMO:]:
            self._knn[key] = found[key]
        while len(self._knn) > KNN_MEMO:
            self._knn.pop(next(iter(self._knn)))
        return np.concatenate([found[key] for key in keys])

    def episode(self, node: NodeView, observation: Observation, candidates: Sequence[Pair]) -> NodeEpisode:
        """The node as the evaluation encodes an item (`learned_episodes.node_episodes`): pair
        features from the run's calibration (the checkpoint's, or the pool's own) for the node's
        text and domain, the candidates available, and the pairs its attempts called."""
        return self.episodes([(node, observation, candidates)])[0]

    def episodes(self, requests: Sequence[Request]) -> list[NodeEpisode]:
        """`episode` for many (node, observation, candidates) at once."""
        return node_episodes(self.loaded, requests, self._embed_many, self._item_accuracies)


def sample_without_replacement(logits: torch.Tensor, n: int, *, seed: int) -> list[int]:
    """n indices drawn from softmax(logits [P]): distinct while P allows, then with replacement.

    Seeded (by the task's text at run time), so a step that is replayed draws the same."""
    probs = torch.softmax(logits.float(), dim=-1).clamp_min(1e-12)  # no exact zeros for multinomial
    generator = torch.Generator().manual_seed(seed)
    distinct = min(n, int(probs.numel()))
    picks = torch.multinomial(probs, distinct, replacement=False, generator=generator).tolist()
    if n > distinct:
        picks += torch.multinomial(probs, n - distinct, replacement=True, generator=generator).tolist()
    return [int(i) for i in picks]


@register("learned")
def make_learned(config: Mapping[str, Any]) -> LearnedPolicy:
    embedder = config.get("embedder")
    return LearnedPolicy(LearnedPolicyConfig.from_mapping(config), embedder=embedder)
