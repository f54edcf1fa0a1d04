"""One orchestration episode per item, batched: call pairs one after another, then finish.

At each step the policy sees the task, λ, the state (steps so far, estimated cost so far,
what the reliability head thinks of the answers in hand, whether they agree) and every
candidate pair; it calls one more pair (a repair or a check of the last answer) or
finishes. The answer that counts is the executed one the reliability head trusts most.

The state reads only executed pairs' responses: `answers`/`surface` of a pair that was
not executed are never looked at, and at route time they are filled in as pairs execute
(`reveal`). Shapes: B items, P pairs, R response features.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from orchestrator.learning.features import FAMILIES, STATIC_DIM
from orchestrator.learning.model import PolicyNet

ACC = STATIC_DIM  # index of the domain accuracy in a pair feature vector
ITEM_ACC = STATIC_DIM + 1  # the per-item accuracy estimate
GLOBAL_ACC = STATIC_DIM + 2  # index of the pair's accuracy over all calibration items
CEILING_FROM = 1.0  # λ from which an item's spend is capped (`preset_bound`): the `cheap` preset's
FAMILY = slice(6, 6 + len(FAMILIES))  # the family one-hot in a pair feature vector


@dataclass
class EpisodeBatch:
    """Everything an episode needs, as tensors; `score`/`cost` only where outcomes are known (training)."""

    task: torch.Tensor  # [B, T] task features
    pairs: torch.Tensor  # [B, P, F] pair features
    available: torch.Tensor  # [B, P] bool
    cost_est: torch.Tensor  # [B, P] estimated cost / cost_ref (calibration), what the policy may know
    answers: torch.Tensor  # [B, P] long: equal ids = same answer; unique negatives where none
    surface: torch.Tensor  # [B, P, 4] response surface features
    score: torch.Tensor | None = None  # [B, P] recorded score
    cost: torch.Tensor | None = None  # [B, P] recorded cost / cost_ref
    calibration_items: int = 0  # how many items the calibration behind the features holds (`binds_best`)

    def rows(self, index: torch.Tensor) -> EpisodeBatch:
        def pick(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t[index]

        return EpisodeBatch(
            task=self.task[index],
            pairs=self.pairs[index],
            available=self.available[index],
            cost_est=self.cost_est[index],
            answers=self.answers[index],
            surface=self.surface[index],
            score=pick(self.score),
            cost=pick(self.cost),
            calibration_items=self.calibration_items,
        )


def response_features(batch: EpisodeBatch, executed: torch.Tensor) -> torch.Tensor:
    """[B, P, 9]: for each executed pair, agreement with the other executed pairs, and its surface."""
    ex = executed.float()  # [B, P]
    same = (batch.answers.unsqueeze(2) == batch.answers.unsqueeze(1)).float()  # [B, P, P]
    same = same * (1 - torch.eye(same.shape[1]))
    agree = (same * ex.unsqueeze(1)).sum(-1)  # [B, P] other executed pairs giving the same answer
    others = ex.sum(-1, keepdim=True) - ex  # [B, P]
    disagree = others - agree
    acc = batch.pairs[..., ACC]  # [B, P]
    acc_other = acc.unsqueeze(1).expand_as(same)  # [B, P(j), P(k)] accuracy of pair k
    agreeing = same * ex.unsqueeze(1)
    disagreeing = (1 - same) * ex.unsqueeze(1) * (1 - torch.eye(same.shape[1]))
    best_agreeing = (acc_other * agreeing).amax(-1)
    best_disagreeing = (acc_other * disagreeing).amax(-1)
    feats = torch.stack([agree / 2, disagree / 2, (agree > 0).float(), best_agreeing, best_disagreeing], dim=-1)
    return torch.cat([feats, batch.surface], dim=-1) * ex.unsqueeze(-1)


def reliability(net: PolicyNet, batch: EpisodeBatch, executed: torch.Tensor) -> torch.Tensor:
    """[B, P] probability that each executed pair's answer is right (0 where not executed).
    Only the executed (item, pair) cells go through the head: a few per item, not all P."""
    out = torch.zeros(executed.shape)
    rows, cols = torch.nonzero(executed, as_tuple=True)
    if rows.numel() == 0:
        return out
    with torch.no_grad():
        response = response_features(batch, executed)[rows, cols]  # [n, R]
        logits = net.reliability_of(net.rel_task_proj(batch.task)[rows], batch.pairs[rows, cols], response)  # [n]
    out[rows, cols] = torch.sigmoid(logits)
    return out


def observe(
    net: PolicyNet,
    batch: EpisodeBatch,
    lam: torch.Tensor,
    executed: torch.Tensor,
    last: torch.Tensor,
    step: int,
    max_steps: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(state [B, S], candidate features [B, P, CANDIDATE_DIM], reliability [B, P]) before the next action."""
    ex = executed.float()
    n_exec = ex.sum(-1)  # [B]
    rel = reliability(net, batch, executed)
    has_last = last >= 0
    last_idx = last.clamp(min=0)
    last_rel = rel.gather(1, last_idx.unsqueeze(1)).squeeze(1) * has_last.float()
    same = (batch.answers.unsqueeze(2) == batch.answers.unsqueeze(1)).float() * ex.unsqueeze(1) * ex.unsqueeze(2)
    cluster = same.sum(-1).amax(-1)  # [B] size of the largest group of agreeing answers
    spent = (batch.cost_est * ex).sum(-1)
    state = torch.stack(
        [
            torch.full_like(n_exec, step / max_steps),
            n_exec / max_steps,
            spent,
            rel.amax(-1),
            last_rel,
            cluster / n_exec.clamp(min=1),
            ((n_exec > cluster) & (n_exec > 0)).float(),
            (has_last & (last_rel < 0.5)).float(),
            (n_exec == 0).float(),
        ],
        dim=-1,
    )
    last_pair = batch.pairs.gather(1, last_idx[:, None, None].expand(-1, 1, batch.pairs.shape[2]))  # [B, 1, F]
    same_family = (batch.pairs[..., FAMILY] * last_pair[..., FAMILY]).sum(-1) * has_last.float().unsqueeze(1)
    last_cost = batch.cost_est.gather(1, last_idx.unsqueeze(1))
    cost_ratio = torch.log((batch.cost_est + 1e-6) / (last_cost + 1e-6)) / 5 * has_last.float().unsqueeze(1)
    best_acc = (batch.pairs[..., ACC] * ex).amax(-1, keepdim=True)
    priced = lam.unsqueeze(1) * batch.cost_est  # [B, P] what λ makes each call cost
    candidate = torch.stack(
        [same_family, cost_ratio, batch.pairs[..., ACC] - best_acc, priced, batch.pairs[..., ITEM_ACC] - priced], dim=-1
    )
    return state, candidate, rel


def step_logits(
    net: PolicyNet,
    batch: EpisodeBatch,
    lam: torch.Tensor,
    executed: torch.Tensor,
    last: torch.Tensor,
    step: int,
    max_steps: int,
    task_h: torch.Tensor | None = None,
    bound: Bound | None = None,
) -> torch.Tensor:
    """[B, P + 1] logits of the next action (call pair j, or P: finish) given the episode so far:
    one step of `rollout`, and what the live policy computes for a node (`policies.learned`).
    With `bound` (`preset_bound`), only the pairs within it: under its spend, up to its floor."""
    state, candidate, _ = observe(net, batch, lam, executed, last, step, max_steps)
    allowed = batch.available & ~executed & (step < max_steps)
    if bound is not None:
        allowed = within_bound(batch, executed, allowed, bound)
    finish_allowed = executed.any(-1) | ~allowed.any(-1)
    encoded = task_h if task_h is not None else net.encode_task(batch.task)
    return net.action_logits(encoded, state, lam, batch.pairs, candidate, allowed, finish_allowed)


def estimated_worth(batch: EpisodeBatch, lam: float, factor: float = 1.0) -> torch.Tensor:
    """[B, P] what the policy's calibration expects each pair to earn on each item at λ: its
    per-item accuracy estimate (times `factor`, what an answer keeps of its score) less λ
    times its estimated cost (-inf where unavailable): the candidate feature the pair scorer
    reads."""
    worth = factor * batch.pairs[..., ITEM_ACC] - lam * batch.cost_est
    return worth.masked_fill(~batch.available, -math.inf)


@dataclass(frozen=True)
class Bound:
    """A preset's bound on an item's episode (`preset_bound`): what it may spend, and how
    accurate over all calibration items a pair it calls must be."""

    cost: torch.Tensor  # [B] estimated cost / cost_ref: the item's whole spend stays under it
    floor: torch.Tensor  # [B] calibration accuracy a called pair must reach


CHEAPEST_TIE = 0.01  # pairs within 1% of the cheapest pair's estimated cost count as as cheap
BEST_UPTO = 0.0  # λ up to which the episode is bound to the most accurate pair: the `best` preset's
BEST_FROM_ITEMS = 200  # calibration items from which that pair is known well enough to bind `best` to it


def binds_best(calibration_items: int) -> bool:
    """Whether `best` is bound to the calibration's most accurate pair: only where the calibration
    has `BEST_FROM_ITEMS` items or more. On a probe of an unseen pool (tens of items) the most
    accurate pair is a guess, and the policy's own picks do better: at K = 50 (seed 0) the
    probe's pair was below the test's most accurate in 4 of the 12 protocol splits, the free
    policy at λ = 0 in 2 (docs/evaluation.md, "Presets bound to their anchors")."""
    return calibration_items >= BEST_FROM_ITEMS


def preset_bound(batch: EpisodeBatch, lam: float) -> Bound | None:
    """The bound a preset puts on each item's episode at λ, or None between the two ends (and
    at λ = 0 where the batch's calibration is too small: `binds_best`).

    Each end has an anchor pair per item, among its available pairs:
    - from λ = `CEILING_FROM` (the `cheap` preset), the cheapest (of pairs within
      `CHEAPEST_TIE` of that cost, the most accurate over all calibration items);
    - up to λ = `BEST_UPTO` (the `best` preset), the most accurate over all calibration
      items (of equals, the cheapest).

    The policy still picks per item, but only pairs that keep the spend under the anchor's
    estimated cost and are no less accurate over the calibration than it: so `cheap` is never
    dearer than the cheapest pair, nor trades it for a pair a hair cheaper that answers worse,
    and `best` is the pair the calibration shows most accurate (issue 47: both presets broke
    their promise where the policy strayed from these pairs on an unseen pool). Training never
    applies it: it shapes routing only.
    """
    if BEST_UPTO < lam < CEILING_FROM or (lam <= BEST_UPTO and not binds_best(batch.calibration_items)):
        return None
    accuracy = batch.pairs[..., GLOBAL_ACC]
    cost = batch.cost_est.masked_fill(~batch.available, math.inf)
    if lam >= CEILING_FROM:
        cheapest = cost.min(-1, keepdim=True).values
        tied = batch.available & (cost <= cheapest * (1 + CHEAPEST_TIE))
        anchor = accuracy.masked_fill(~tied, -math.inf).argmax(-1, keepdim=True)
    else:
        best = accuracy.masked_fill(~batch.available, -math.inf).amax(-1, keepdim=True)
        anchor = cost.masked_fill(accuracy < best, math.inf).argmin(-1, keepdim=True)
    return Bound(cost=batch.cost_est.gather(1, anchor).squeeze(1), floor=accuracy.gather(1, anchor).squeeze(1))


def within_bound(batch: EpisodeBatch, executed: torch.Tensor, allowed: torch.Tensor, bound: Bound) -> torch.Tensor:
    """`allowed` [B, P] less the pairs that would take the item's estimated spend past the
    bound's cost, or that are less accurate over the calibration than its floor; an item that
    has called nothing and fits nothing keeps its cheapest allowed pair."""
    spent = (batch.cost_est * executed.float()).sum(-1, keepdim=True)
    under = allowed & (spent + batch.cost_est <= bound.cost.unsqueeze(1) * (1 + 1e-6))
    under &= batch.pairs[..., GLOBAL_ACC] >= bound.floor.unsqueeze(1) - 1e-6
    cheapest = batch.cost_est.masked_fill(~allowed, math.inf).min(-1, keepdim=True).values
    fallback = allowed & (batch.cost_est == cheapest)
    stuck = ~under.any(-1, keepdim=True) & ~executed.any(-1, keepdim=True)
    return torch.where(stuck, fallback, under)


@dataclass
class Rollout:
    actions: torch.Tensor  # [B, steps] pair index, P = finish, -1 = episode already over
    logp: torch.Tensor  # [B, steps] log-probability of each action (0 where over)
    entropy: torch.Tensor  # [B, steps]
    executed: torch.Tensor  # [B, P] bool
    order: list[list[int]]  # per item, pairs executed in order
    final: torch.Tensor  # [B] the executed pair whose answer counts
    spent_est: torch.Tensor  # [B] estimated cost / cost_ref


def rollout(
    net: PolicyNet,
    batch: EpisodeBatch,
    lam: torch.Tensor,
    *,
    max_steps: int,
    mode: str = "sample",
    forced: torch.Tensor | None = None,
    targets: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    reveal: Callable[[torch.Tensor], None] | None = None,
    bound: Bound | None = None,
) -> Rollout:
    """Run episodes: mode "sample" (RL), "greedy" (routing) or "forced" (teacher forcing / re-scoring `forced`).

    With `targets` [B, steps, P + 1] bool, `logp` is the log-probability of the whole target
    set at each step (the marginal likelihood of "any of these"), while `forced` still
    decides which action is taken. `reveal(chosen [B])` is called after each step with the pair each item executed
    (-1 for none), so a caller can fill in the responses that execution returns. `bound`: see `step_logits`.
    """
    b, p = batch.available.shape
    executed = torch.zeros(b, p, dtype=torch.bool)
    done = torch.zeros(b, dtype=torch.bool)
    last = torch.full((b,), -1, dtype=torch.long)
    task_h = net.encode_task(batch.task)
    actions, logps, entropies = [], [], []
    order: list[list[int]] = [[] for _ in range(b)]
    for step in range(max_steps + 1):
        logits = step_logits(net, batch, lam, executed, last, step, max_steps, task_h, bound)
        logprobs = torch.log_softmax(logits, dim=-1)  # [B, P+1]
        if mode == "forced":
            assert forced is not None
            action = forced[:, step].clamp(min=0) if step < forced.shape[1] else torch.full((b,), p)
        elif mode == "greedy":
            action = logits.argmax(-1)
        else:
            action = torch.multinomial(logprobs.exp(), 1, generator=generator).squeeze(-1)
        action = torch.where(done, torch.full_like(action, -1), action)
        safe = action.clamp(min=0)
        if targets is not None and step < targets.shape[1]:
            in_set = targets[:, step] & torch.isfinite(logprobs)
            # Rows without a target (or already over) score their best allowed action, masked to 0
            # below: logsumexp over a set with no finite entry would make NaN gradients.
            empty = (~in_set.any(-1) | done).unsqueeze(1)
            fallback = torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[1]).bool()
            in_set = torch.where(empty, fallback, in_set)
            logp = torch.logsumexp(logprobs.masked_fill(~in_set, -math.inf), dim=-1)
            logp = logp.masked_fill(empty.squeeze(1), 0.0)
        else:
            logp = logprobs.gather(1, safe.unsqueeze(1)).squeeze(1).masked_fill(done, 0.0)
        probs = logprobs.exp()
        entropy = -(probs * logprobs.masked_fill(probs == 0, 0.0)).sum(-1).masked_fill(done, 0.0)
        actions.append(action)
        logps.append(logp)
        entropies.append(entropy)
        calls = (action >= 0) & (action < p)
        chosen = torch.where(calls, action, torch.full_like(action, -1))
        executed = executed | (torch.nn.functional.one_hot(chosen.clamp(min=0), p).bool() & calls.unsqueeze(1))
        for i in torch.nonzero(calls).flatten().tolist():
            order[i].append(int(action[i]))
        if reveal is not None:
            reveal(chosen)
        last = torch.where(calls, action, last)
        done = done | (action == p)
        if bool(done.all()):
            break
    rel = reliability(net, batch, executed)
    final = torch.where(executed.any(-1), rel.masked_fill(~executed, -1.0).argmax(-1), torch.full((b,), -1))
    return Rollout(
        actions=torch.stack(actions, dim=1),
        logp=torch.stack(logps, dim=1),
        entropy=torch.stack(entropies, dim=1),
        executed=executed,
        order=order,
        final=final,
        spent_est=(batch.cost_est * executed.float()).sum(-1),
    )


def violations(batch: EpisodeBatch, out: Rollout) -> torch.Tensor:
    """[B] pairs each episode executed that were not available to it (protocol violations)."""
    return (out.executed & ~batch.available).sum(-1).float()


def episode_reward(batch: EpisodeBatch, out: Rollout, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(reward [B], correct [B]): the final answer's recorded score minus λ times the recorded normalized cost."""
    assert batch.score is not None and batch.cost is not None
    correct = batch.score.gather(1, out.final.clamp(min=0).unsqueeze(1)).squeeze(1) * (out.final >= 0).float()
    spent = (batch.cost * out.executed.float()).sum(-1)
    return correct - lam * spent, correct
