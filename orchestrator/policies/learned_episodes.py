"""Nodes as the learned policy sees them: each one an episode of one item (`learning.episode`),
built for many nodes at once, and the network's passes over them made in one go.

`node_episodes` encodes nodes as the evaluation encodes items (`learning.dataset.encode`):
pair features from the run's calibration for the node's text and domain, the candidates
available, and the pairs its attempts called. A node alone is a batch of one; many nodes
(the runs `core.step.step_many` moves in lockstep) share one embedding call, one kNN pass
over the calibration items and one feature assembly per pool layout.

`prepare` is what `LearnedPolicy.act_many` does before it acts on each observation: for every
node about to be decided, its episode over its untried candidates, with the next-step logits
and the reliability of its answers, from one forward pass per group of nodes that share λ,
steps and pairs. The policy's choices then read them instead of making a pass per node, and
come out as they would alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from orchestrator.composite.items import node_items
from orchestrator.core.protocol import NodeView, Observation, Pair, PairRef
from orchestrator.learning.calibration import known_domains
from orchestrator.learning.cascade import CascadePlan, plan_from_scores
from orchestrator.learning.episode import EpisodeBatch, preset_bound, reliability, step_logits
from orchestrator.learning.features import PairInfo, assemble_pair_features, domain_indices, task_features
from orchestrator.learning.responses import answer_key, response_surface

if TYPE_CHECKING:
    from orchestrator.policies.learned import LearnedPolicy
    from orchestrator.policies.learned_loading import LoadedPolicy

ASSUMED_TOKENS = (500, 250)  # (in, out) to price a pair the checkpoint never saw

# (node, its observation, the candidates it may call next)
Request = tuple[NodeView, Observation, Sequence[Pair]]
# (texts, their domains, their embeddings [n, e], the domains' accuracy priors [n, p]) -> [n, p]
Accuracy = Callable[[list[str], list[str], np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Built:
    """Nodes' episodes built together (`node_episodes`): row r of each is one node's."""

    batch: EpisodeBatch
    executed: torch.Tensor  # [n, P] bool: the pairs each node's attempts called
    last: torch.Tensor  # [n] each node's last attempt's column, -1 before any

    def rows(self, rows: Sequence[int]) -> tuple[EpisodeBatch, torch.Tensor, torch.Tensor]:
        """(batch, executed, last) of these rows, in this order."""
        index = torch.as_tensor(rows, dtype=torch.long)
        return self.batch.rows(index), self.executed[index], self.last[index]


@dataclass
class NodeEpisode:
    """A node as one episode of the policy: a batch of one item whose columns are the
    checkpoint's pairs, then the pool's pairs it does not know; row `row` of the nodes built
    with it."""

    built: Built
    row: int
    refs: list[PairRef | None]  # each column's pair in this run's pool (None: not admissible here)
    steps: int  # pairs called so far
    twins: dict[PairRef, int] = field(default_factory=dict)  # pool pairs of a column's model and primitive

    @cached_property
    def batch(self) -> EpisodeBatch:
        return self.built.batch.rows(torch.tensor([self.row]))

    @cached_property
    def executed(self) -> torch.Tensor:
        """[1, P] bool: the pairs the node's attempts called."""
        return self.built.executed[self.row : self.row + 1]

    @cached_property
    def last(self) -> torch.Tensor:
        """[1] the last attempt's column, -1 before any."""
        return self.built.last[self.row : self.row + 1]

    def column(self, ref: PairRef) -> int:
        return self.twins[ref] if ref in self.twins else self.refs.index(ref)


@dataclass(frozen=True)
class Layout:
    """Which pool pair each column of a node's episode is: the checkpoint's pairs, then the
    pool's admissible pairs it never saw (`extra`); twins are a column's other endpoints."""

    refs: tuple[PairRef | None, ...]
    extra: tuple[Pair, ...]
    twins: dict[PairRef, int]


def layout(loaded: LoadedPolicy, observation: Observation, mine: frozenset[PairRef]) -> Layout:
    """The columns of a node that may call or has called the pairs `mine`. Two endpoints of one
    model (its recordings and the live model; two servers of it) share a column: the one this
    node may call stands for both, and its twins map to it."""
    known: dict[tuple[str, str], Pair] = {}
    twins: list[tuple[tuple[str, str], Pair]] = []
    for pair in sorted(observation.pairs, key=lambda pair: pair.ref not in mine):
        key = (pair.model.removeprefix("replay/"), pair.ref.primitive)
        if key in known:
            twins.append((key, pair))
        else:
            known[key] = pair
    columns = loaded.columns
    extra = [pair for key, pair in known.items() if key not in columns and pair.ref.primitive != "plan"]
    refs: list[PairRef | None] = [None] * len(loaded.context.infos) + [pair.ref for pair in extra]
    for key, j in columns.items():
        if key in known:
            refs[j] = known[key].ref
    twin_columns = {pair.ref: refs.index(known[key].ref) for key, pair in twins if known[key].ref in refs}
    return Layout(tuple(refs), tuple(extra), twin_columns)


def node_episodes(
    loaded: LoadedPolicy, requests: Sequence[Request], embed: Callable[[list[str]], np.ndarray], accuracy: Accuracy
) -> list[NodeEpisode]:
    """Each requested node as an episode; `embed` texts -> [n, e], `accuracy` the per-item
    accuracy estimate (`LearnedPolicy._item_accuracies`)."""
    if not requests:
        return []
    calib = loaded.context.calibration
    texts = [node.text for node, _, _ in requests]
    embeddings = np.asarray(embed(texts), dtype=np.float32)
    # A bare text (no domain given) takes its neighbours' domain.
    domains = known_domains(calib, embeddings, [node.domain or observation.domain for node, observation, _ in requests])
    dom = domain_indices(domains)
    acc_all = calib.domain_acc[dom]  # [n, p]: computed as `learning.calibration.pair_features` does
    knn_all = accuracy(texts, domains, embeddings, acc_all)
    layouts = []
    made: dict[tuple[int, frozenset[PairRef]], Layout] = {}  # runs in lockstep share their pool's pairs
    for node, observation, candidates in requests:
        mine = frozenset({pair.ref for pair in candidates} | {a.pair for a in node.attempts})
        if (id(observation.pairs), mine) not in made:
            made[(id(observation.pairs), mine)] = layout(loaded, observation, mine)
        layouts.append(made[(id(observation.pairs), mine)])
    groups: dict[tuple[Any, ...], list[int]] = {}  # nodes whose columns are the same pairs
    for k, found in enumerate(layouts):
        described = tuple((pair.model, pair.input_cost_per_mtok, pair.output_cost_per_mtok, pair.context_window)
                          for pair in found.extra)  # fmt: skip
        groups.setdefault((found.refs, described), []).append(k)
    episodes: list[NodeEpisode | None] = [None] * len(requests)
    for rows in groups.values():
        extra = layouts[rows[0]].extra
        index = np.asarray(rows)
        acc, knn = acc_all[index], knn_all[index]
        cost = calib.domain_cost[dom[index]] / calib.cost_ref
        glob = calib.global_acc
        infos = list(loaded.context.infos)
        if extra:  # pairs the checkpoint never saw: the pool's mean, at their listed prices
            mean = float(glob.mean()) if glob.size else 0.5
            priced = np.asarray([[min(priced_call(pair) / calib.cost_ref, 10.0) for pair in extra]])
            fill = np.full((len(rows), len(extra)), mean)
            acc, knn = np.concatenate([acc, fill], axis=1), np.concatenate([knn, fill], axis=1)
            cost = np.concatenate([cost, np.repeat(priced, len(rows), axis=0)], axis=1)
            glob = np.concatenate([glob, np.full(len(extra), mean)])
            infos += [pair_info(pair) for pair in extra]
        found = layouts[rows[0]]
        available, executed, answers, surface, last = fill_in(found, [requests[k] for k in rows])
        batch = EpisodeBatch(
            task=torch.from_numpy(task_features(embeddings[index], [domains[k] for k in rows])),
            pairs=torch.from_numpy(assemble_pair_features(infos, acc, knn, glob, cost)),
            available=torch.from_numpy(available),
            cost_est=torch.from_numpy(cost.astype(np.float32)),
            answers=torch.from_numpy(answers),
            surface=torch.from_numpy(surface),
            calibration_items=int(calib.embeddings.shape[0]),
        )
        built = Built(batch, torch.from_numpy(executed), torch.from_numpy(last))
        refs, steps = list(found.refs), executed.sum(-1).tolist()
        for r, k in enumerate(rows):
            episodes[k] = NodeEpisode(built, r, refs, steps[r], found.twins)
    return [episode for episode in episodes if episode is not None]


def fill_in(found: Layout, group: Sequence[Request]) -> tuple[np.ndarray, ...]:
    """For nodes whose columns are `found.refs`: (available [n, P], the columns each may call:
    its candidates and the pairs it called; executed [n, P]; answers [n, P], equal ids for equal
    answers; surface [n, P, 4]; the last attempt's column [n]), from their attempts."""
    n, p = len(group), len(found.refs)
    column = {ref: j for j, ref in enumerate(found.refs) if ref is not None}
    available, executed = np.zeros((n, p), dtype=bool), np.zeros((n, p), dtype=bool)
    answers = np.tile(-1 - np.arange(p, dtype=np.int64), (n, 1))
    surface = np.zeros((n, p, 4), dtype=np.float32)
    last = np.full(n, -1, dtype=np.int64)
    for r, (node, _, candidates) in enumerate(group):
        for pair in candidates:
            j = column.get(pair.ref)
            if j is not None:
                available[r, j] = True
        seen: dict[str, int] = {}
        for attempt in node.attempts:
            j = column.get(attempt.pair)
            if j is None:
                continue
            available[r, j] = executed[r, j] = True
            response = attempt.output if attempt.status == "ok" else None
            said = answer_key(response)
            if said is not None:
                answers[r, j] = seen.setdefault(said, len(seen))
            surface[r, j] = response_surface(response)
            last[r] = j
    return available, executed, answers, surface, last


def pair_info(pair: Pair) -> PairInfo:
    return PairInfo(
        model=pair.model.removeprefix("replay/"),
        primitive=pair.ref.primitive,
        input_per_mtok=pair.input_cost_per_mtok,
        output_per_mtok=pair.output_cost_per_mtok,
        context_window=pair.context_window,
    )


def priced_call(pair: Pair) -> float:
    """USD of one call at the assumed token counts, from the pair's prices (inf when unpriced)."""
    if pair.input_cost_per_mtok is None and pair.output_cost_per_mtok is None:
        return math.inf
    tokens_in, tokens_out = ASSUMED_TOKENS
    return ((pair.input_cost_per_mtok or 0.0) * tokens_in + (pair.output_cost_per_mtok or 0.0) * tokens_out) / 1e6


# --- the passes for many observations at once ---


@dataclass(frozen=True)
class Prepared:
    """A node's episode over `candidates`, with the policy's next-step logits [1, P + 1] and
    the reliability of its answers [P], made ahead for `LearnedPolicy.act_many`; with a cascade
    gate, the node's cascade plan and each of its columns' pair (`learned_cascade.plan_node`)."""

    candidates: tuple[PairRef, ...]
    episode: NodeEpisode
    logits: torch.Tensor
    trust: torch.Tensor
    cascade: tuple[CascadePlan, list[PairRef | None]] | None = None


def deciding(policy: LearnedPolicy, observation: Observation) -> list[Request]:
    """The nodes the policy may decide on next, each with its untried candidates: the nodes a
    pair is chosen for (ready, or answered for review), not aggregates nor composite nodes."""
    if observation.root.status == "succeeded":
        return []
    by_ref = {pair.ref: pair for pair in observation.pairs}
    found: list[Request] = []
    for node in observation.nodes:
        if node.in_flight or node.status not in ("ready", "answered") or node.kind == "aggregate":
            continue
        if node_items(node, observation):
            continue
        tried = {a.pair for a in node.attempts}
        found.append((node, observation, [by_ref[r] for r in policy._candidates(node, observation) if r not in tried]))
    return found


def prepare(policy: LearnedPolicy, observations: Sequence[Observation]) -> dict[tuple[int, str], Prepared]:
    """(id of the observation, node key) -> the node's prepared episode, for every node the
    observations may be decided on: one forward pass per group sharing λ, steps and columns."""
    requests = [request for observation in observations for request in deciding(policy, observation)]
    episodes = policy.episodes(requests)
    max_steps = policy.loaded.max_steps
    groups: dict[tuple[int, float, int], list[int]] = {}
    for k, ((_, observation, _), episode) in enumerate(zip(requests, episodes, strict=True)):
        key = (id(episode.built), policy.lam(observation), min(episode.steps, max_steps - 1))
        groups.setdefault(key, []).append(k)
    prepared: dict[tuple[int, str], Prepared] = {}
    for (_, lam, steps), rows in groups.items():
        batch, executed, last = episodes[rows[0]].built.rows([episodes[k].row for k in rows])
        with torch.no_grad():
            logits = step_logits(
                policy.net, batch, torch.full((len(rows),), lam, dtype=torch.float32), executed, last, steps,
                max_steps, bound=preset_bound(batch, lam),
            )  # fmt: skip
            trust = reliability(policy.net, batch, executed)
        for r, k in enumerate(rows):
            node, observation, candidates = requests[k]
            prepared[(id(observation), node.key)] = Prepared(
                tuple(pair.ref for pair in candidates), episodes[k], logits[r : r + 1], trust[r]
            )
    for at, plan in cascade_plans(policy, requests).items():
        prepared[at] = replace(prepared[at], cascade=plan)
    return prepared


def cascade_plans(
    policy: LearnedPolicy, requests: Sequence[Request]
) -> dict[tuple[int, str], tuple[CascadePlan, list[PairRef | None]]]:
    """The cascade plan of every answered node under a cascade gate (`plan_cascades`)."""
    answered = [(node, observation) for node, observation, _ in requests if node.status == "answered"]
    gated = [fresh_request(policy, node, observation) for node, observation in answered
             if policy.cascade_gate(observation) is not None]  # fmt: skip
    return plan_cascades(policy, gated)


def fresh_request(policy: LearnedPolicy, node: NodeView, observation: Observation) -> Request:
    """The node with nothing called, over every candidate: what its cascade plan is made from."""
    by_ref = {pair.ref: pair for pair in observation.pairs}
    return replace(node, attempts=()), observation, [by_ref[ref] for ref in policy._candidates(node, observation)]


def plan_cascades(
    policy: LearnedPolicy, fresh: Sequence[Request]
) -> dict[tuple[int, str], tuple[CascadePlan, list[PairRef | None]]]:
    """(id of the observation, node key) -> the node's cascade plan over its pairs, and each
    column's pair (`learning.cascade.plan_from_scores`: its fresh episode's first-step logits
    at λ and at 0), in one pass per group of nodes that share λ and columns."""
    episodes = policy.episodes(fresh)
    groups: dict[tuple[int, float], list[int]] = {}
    for k, ((_, observation, _), episode) in enumerate(zip(fresh, episodes, strict=True)):
        groups.setdefault((id(episode.built), policy.lam(observation)), []).append(k)
    plans = {}
    steps = policy.loaded.max_steps
    for (_, lam), rows in groups.items():
        batch = episodes[rows[0]].built.rows([episodes[k].row for k in rows])[0]
        p = len(episodes[rows[0]].refs)
        none = torch.zeros(len(rows), p, dtype=torch.bool)
        last = torch.full((len(rows),), -1, dtype=torch.long)
        with torch.no_grad():
            at_lam = step_logits(policy.net, batch, torch.full((len(rows),), lam), none, last, 0, steps)
            at_zero = step_logits(policy.net, batch, torch.zeros(len(rows)), none, last, 0, steps)
        plan = plan_from_scores(at_lam[:, :p], at_zero[:, :p], batch)
        for r, k in enumerate(rows):
            node, observation, _ = fresh[k]
            row = CascadePlan(ranked=plan.ranked[r : r + 1], escalate=plan.escalate[r : r + 1])
            plans[(id(observation), node.key)] = (row, episodes[k].refs)
    return plans
