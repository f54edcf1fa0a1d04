"""The learned policy at run time: a trained checkpoint picks the pair for every node.

It keeps the default policy's flow (composite tasks split into their items, aggregate
nodes aggregated, transient errors retried, the run finished with the root's answer) and
replaces its two choices:
- whether to plan a decomposable task: the decompose head (trained with negative targets
  only, since no recorded composite run shows planning pays: it delegates directly);
- which admissible pair solves or repairs a node: the pair scorer, at the request's cost
  preference λ (`observation.cost_preference`) or the configured one / preset.

Best-of-N (`observation.best_of` = N > 1, with a `reward_model` in the config): for a
fresh root, N pairs are drawn from the softmax of the pair logits at the run's λ (without
replacement while untried pairs remain), OrchRM scores them, and only the top one is
solved; see `orchestrator.policies.best_of`.

A repair after a failed attempt sees that attempt in its state ("the previous attempt
failed on pair X", with X's family and cost), exactly as in training.

Config: `checkpoint` (else $ORCHESTRA_POLICY_CHECKPOINT), `preset` (cheap / balanced /
best) or `cost_preference` (λ), `retries`, `reward_model` (an OrchRM checkpoint, for
best-of-N), and optionally `embedder` (a callable
texts -> [n, 384] vectors; default `orchestrator.embedding.embed`, for tests and benches).
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from orchestrator.envelope import TRANSIENT_ERRORS
from orchestrator.learning.episode import ACC
from orchestrator.learning.features import PairInfo, assemble_pair_features, model_family, task_features
from orchestrator.learning.model import PolicyNet, load_checkpoint
from orchestrator.outcomes import DOMAINS
from orchestrator.policies import COST_PRESETS, register
from orchestrator.policies.default import DefaultConfig, DefaultPolicy
from orchestrator.protocol import Action, NodeView, Observation, Pair, PairRef, Repair, Solve

PRESETS = COST_PRESETS  # λ in units of the pool's most expensive pair
ASSUMED_TOKENS = (500, 250)  # (in, out) to price a pair the checkpoint never saw
Embedder = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class LearnedPolicyConfig:
    """How the learned policy is loaded and which trade-off it serves by default."""

    checkpoint: str  # path of a train_policy checkpoint
    cost_preference: float  # λ when the request carries none
    retries: int = 1  # same-pair retries of a transient failure
    reward_model: str | None = None  # OrchRM checkpoint that picks among best-of-N candidates

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> LearnedPolicyConfig:
        checkpoint = config.get("checkpoint") or os.environ.get("ORCHESTRA_POLICY_CHECKPOINT")
        if not checkpoint:
            raise ValueError(
                "the learned policy needs a checkpoint: config 'checkpoint' or ORCHESTRA_POLICY_CHECKPOINT"
            )
        preset = str(config.get("preset", "balanced"))
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
        lam = config.get("cost_preference")
        return cls(
            checkpoint=str(checkpoint),
            cost_preference=float(lam) if lam is not None else PRESETS[preset],
            retries=int(config.get("retries", 1)),
            reward_model=str(config["reward_model"]) if config.get("reward_model") else None,
        )


@dataclass(frozen=True)
class PoolStats:
    """Calibration statistics of the training pool, by (model, primitive)."""

    index: dict[tuple[str, str], int]
    global_acc: np.ndarray  # [p]
    domain_acc: np.ndarray  # [len(DOMAINS), p]
    domain_cost: np.ndarray  # [len(DOMAINS), p] USD
    cost_ref: float

    @classmethod
    def from_payload(cls, pool: Mapping[str, Any]) -> PoolStats:
        return cls(
            index={(str(m), str(p)): j for j, (m, p) in enumerate(pool["pairs"])},
            global_acc=np.asarray(pool["global_acc"], dtype=np.float64),
            domain_acc=np.asarray(pool["domain_acc"], dtype=np.float64),
            domain_cost=np.asarray(pool["domain_cost"], dtype=np.float64),
            cost_ref=float(pool["cost_ref"]),
        )


class LearnedPolicy(DefaultPolicy):
    name = "learned"

    def __init__(self, config: LearnedPolicyConfig, *, embedder: Embedder | None = None) -> None:
        super().__init__(DefaultConfig(retries=config.retries, reward_model=config.reward_model), embedder=embedder)
        self.learned = config
        net, payload = load_checkpoint(Path(config.checkpoint))
        self.net: PolicyNet = net
        self.pool = PoolStats.from_payload(payload["pool"])
        self.embedder = embedder
        self._task_cache: dict[tuple[str, str], torch.Tensor] = {}
        self._families: dict[PairRef, str] = {}

    # --- the two learned choices ---

    def _act_on(self, node: NodeView, observation: Observation) -> Action | None:
        plain_task = not observation.task_metadata.get("items") and node.plan is None
        fresh_root = node.kind == "root" and node.status == "ready" and not node.in_flight and not node.attempts
        planning = fresh_root and observation.decomposable and plain_task and not node.plan_failed
        if planning and not self._wants_decomposition(node, observation):
            return self._solve(node, observation)
        return super()._act_on(node, observation)

    def _solve(self, node: NodeView, observation: Observation) -> Action | None:
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

    # --- scoring ---

    def lam(self, observation: Observation) -> float:
        pref = observation.cost_preference
        return float(pref) if pref is not None else self.learned.cost_preference

    def choose(self, node: NodeView, observation: Observation, candidates: Sequence[Pair]) -> PairRef:
        """The candidate with the highest pair logit, given the node's attempts so far."""
        return candidates[int(self.logits(node, observation, candidates).argmax())].ref

    def logits(self, node: NodeView, observation: Observation, candidates: Sequence[Pair]) -> torch.Tensor:
        """[P] pair logits of the candidates at the run's λ, given the node's attempts so far."""
        domain = str(node.metadata.get("domain") or observation.task_metadata.get("domain") or "")
        task = self._task(node.text, domain)  # [1, T]
        pairs, cost = self._pair_features(candidates, domain)  # [1, P, F], [P]
        lam = torch.tensor([self.lam(observation)], dtype=torch.float32)
        for pair in observation.pairs:
            self._families.setdefault(pair.ref, model_family(pair.model))
        tried = [p for p in observation.pairs if any(a.pair == p.ref for a in node.attempts)]
        tried_acc = float(self._pair_features(tried, domain)[0][0, :, ACC].max()) if tried else 0.0
        state, candidate = self._state(node, candidates, pairs, cost, lam, tried_acc=tried_acc)
        with torch.no_grad():
            logits = self.net.action_logits(
                self.net.encode_task(task),
                state,
                lam,
                pairs,
                candidate,
                torch.ones(1, len(candidates), dtype=torch.bool),
                torch.zeros(1, dtype=torch.bool),  # a node without an answer is not finished
            )
        out: torch.Tensor = logits[0, : len(candidates)]
        return out

    def wants_decomposition(self, observation: Observation) -> bool:
        return self._wants_decomposition(observation.root, observation)

    def _wants_decomposition(self, node: NodeView, observation: Observation) -> bool:
        domain = str(observation.task_metadata.get("domain") or "")
        lam = torch.tensor([self.lam(observation)], dtype=torch.float32)
        with torch.no_grad():
            logit = self.net.decompose_logit(self.net.encode_task(self._task(node.text, domain)), lam)
        return bool(logit.item() > 0)

    def _task(self, text: str, domain: str) -> torch.Tensor:
        key = (text, domain)
        if key not in self._task_cache:
            if self.embedder is None:
                from orchestrator.embedding import embed

                self.embedder = embed
            emb = np.asarray(self.embedder([text]), dtype=np.float32)
            self._task_cache[key] = torch.from_numpy(task_features(emb, [domain]))
        return self._task_cache[key]

    def _pair_features(self, candidates: Sequence[Pair], domain: str) -> tuple[torch.Tensor, np.ndarray]:
        """([1, P, F] pair features, [P] estimated cost / cost_ref) from the training pool's statistics."""
        pool = self.pool
        d = DOMAINS.index(domain) if domain in DOMAINS else 0
        mean_acc = float(pool.global_acc.mean()) if pool.global_acc.size else 0.5
        acc, glob, cost, infos = [], [], [], []
        for pair in candidates:
            j = pool.index.get((pair.model.removeprefix("replay/"), pair.ref.primitive))
            acc.append(pool.domain_acc[d, j] if j is not None else mean_acc)
            glob.append(pool.global_acc[j] if j is not None else mean_acc)
            cost.append(pool.domain_cost[d, j] if j is not None else _priced(pair))
            infos.append(
                PairInfo(
                    model=pair.model.removeprefix("replay/"),
                    primitive=pair.ref.primitive,
                    input_per_mtok=pair.input_cost_per_mtok,
                    output_per_mtok=pair.output_cost_per_mtok,
                    context_window=pair.context_window,
                )
            )
        acc_a = np.asarray([acc])
        cost_a = np.minimum(np.asarray([cost]) / pool.cost_ref, 10.0)  # an unpriced pair looks expensive
        # No calibration embeddings at run time: the kNN accuracy falls back to the domain accuracy.
        feats = assemble_pair_features(infos, acc_a, acc_a, np.asarray(glob), cost_a)
        return torch.from_numpy(feats), cost_a[0]

    def _state(
        self,
        node: NodeView,
        candidates: Sequence[Pair],
        pairs: torch.Tensor,
        cost: np.ndarray,
        lam: torch.Tensor,
        *,
        tried_acc: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """State [1, S] and candidate features [1, P, 5], built as `episode.observe` builds them in training.

        A failed attempt is an executed pair whose answer is judged wrong: reliability 0.
        """
        steps = 3
        n = min(len(node.attempts), steps)
        spent = sum(a.cost_usd for a in node.attempts) / self.pool.cost_ref
        last = node.last_attempt
        last_failed = 1.0 if last is not None and last.status != "ok" else 0.0
        state = torch.tensor(
            [[n / steps, n / steps, spent, 0.0, 0.0, 0.0, 0.0, last_failed, float(n == 0)]], dtype=torch.float32
        )
        acc, knn = pairs[0, :, ACC], pairs[0, :, ACC + 1]
        same_family = torch.zeros(len(candidates))
        ratio = torch.zeros(len(candidates))
        if last is not None:
            last_family = self._families.get(last.pair)
            same_family = torch.tensor([float(model_family(c.model) == last_family) for c in candidates])
            last_cost = last.cost_usd / self.pool.cost_ref
            ratio = torch.from_numpy((np.log((cost + 1e-6) / (last_cost + 1e-6)) / 5).astype(np.float32))
        priced = lam * torch.from_numpy(cost.astype(np.float32))
        candidate = torch.stack([same_family, ratio, acc - tried_acc, priced, knn - priced], dim=-1)
        return state, candidate.unsqueeze(0)


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


def _priced(pair: Pair) -> float:
    """USD of one call at the assumed token counts, from the pair's prices (inf when unpriced)."""
    if pair.input_cost_per_mtok is None and pair.output_cost_per_mtok is None:
        return math.inf
    tokens_in, tokens_out = ASSUMED_TOKENS
    return ((pair.input_cost_per_mtok or 0.0) * tokens_in + (pair.output_cost_per_mtok or 0.0) * tokens_out) / 1e6


@register("learned")
def make_learned(config: Mapping[str, Any]) -> LearnedPolicy:
    embedder = config.get("embedder")
    return LearnedPolicy(LearnedPolicyConfig.from_mapping(config), embedder=embedder)
