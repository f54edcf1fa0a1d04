"""The learned policy's agreement cascade: a cheap second opinion, and escalation when they differ.

At a cost preference λ the policy ranks the pairs for an item. The cascade calls its first
pair and a second opinion (its 2nd, 3rd or 4th); when their answers agree it keeps the
first, otherwise it escalates (at once, with no second opinion, when the first answer has
no comparable form): it calls the pair the policy ranks first at λ = 0
(accuracy only), or the pair of highest estimated accuracy on this item (the calibration's
per-item estimate), and keeps that one. Every call is paid.

Whether the cascade pays, which second opinion and which escalation, is decided per benchmark on the
training items (`fit_gate`): it is switched on only where its mean reward (score -
λ·cost) there beats the plain first pair's. A benchmark whose answers cannot be compared
(code, or no response text) never agrees, so it gains nothing and stays off; a benchmark
never seen in training gets no cascade.

Only executed responses are read at route time (`reveal`), as for any router.
Shapes: B items, P pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from orchestrator.learning.episode import ITEM_ACC, EpisodeBatch, observe
from orchestrator.learning.model import PolicyNet

Answer = Callable[[int, int], str | None]  # (item, pair) -> the answer key an executed pair returned


def first_scores(net: PolicyNet, batch: EpisodeBatch, lam: float, max_steps: int) -> torch.Tensor:
    """[B, P]: the policy's logits for the first call at λ; a pair it may not call is -inf."""
    b, p = batch.available.shape
    lams = torch.full((b,), float(lam))
    executed = torch.zeros(b, p, dtype=torch.bool)
    last = torch.full((b,), -1, dtype=torch.long)
    with torch.no_grad():
        state, candidate, _ = observe(net, batch, lams, executed, last, 0, max_steps)
        logits = net.action_logits(
            net.encode_task(batch.task),
            state,
            lams,
            batch.pairs,
            candidate,
            batch.available,
            torch.zeros(b, dtype=torch.bool),
        )
    return logits[:, :p]


SECOND_OPINIONS = 3  # the second opinion is the policy's 2nd, 3rd or 4th pair at λ, chosen on training items


@dataclass(frozen=True)
class CascadePlan:
    """Per item: the policy's pairs at λ, best first, and the pair it would escalate to."""

    ranked: np.ndarray  # int64 [B, 1 + SECOND_OPINIONS] (-1 = no such pair)
    escalate: np.ndarray  # int64 [B, 2]: the policy's first pair at λ = 0; the pair of highest estimated accuracy


def plan_cascade(net: PolicyNet, batch: EpisodeBatch, lam: float, max_steps: int) -> CascadePlan:
    return plan_from_scores(first_scores(net, batch, lam, max_steps), first_scores(net, batch, 0.0, max_steps), batch)


def plan_from_scores(at_lam: torch.Tensor, at_zero: torch.Tensor, batch: EpisodeBatch) -> CascadePlan:
    """The plan from the first call's logits [B, P] at λ and at λ = 0 (-inf: not callable)."""
    top = at_lam.topk(min(1 + SECOND_OPINIONS, at_lam.shape[1]), dim=1)
    ranked = torch.where(torch.isfinite(top.values), top.indices, torch.full_like(top.indices, -1)).numpy()
    if ranked.shape[1] < 1 + SECOND_OPINIONS:  # a pool of fewer pairs
        pad = np.full((ranked.shape[0], 1 + SECOND_OPINIONS - ranked.shape[1]), -1)
        ranked = np.concatenate([ranked, pad], axis=1)
    estimate = batch.pairs[..., ITEM_ACC].masked_fill(~batch.available, -math.inf)  # per-item accuracy estimate
    escalate = torch.stack([at_zero.argmax(1), estimate.argmax(1)], dim=1)
    return CascadePlan(ranked=ranked.astype(np.int64), escalate=escalate.numpy().astype(np.int64))


Choice = tuple[int, int]  # (which ranked pair gives the second opinion: 1..3, 0 = no cascade; which escalation)


def run_cascade(plan: CascadePlan, choice: Sequence[Choice], answer: Answer) -> tuple[list[tuple[int, ...]], list[int]]:
    """(calls per item, the pair whose answer counts).

    `choice[i]`: which of the ranked pairs gives item i its second opinion (1, 2 or 3; 0 =
    no cascade, the first pair only) and which escalation it uses (0: the policy's first
    pair at λ = 0, 1: the pair of highest estimated accuracy).
    """
    executed: list[tuple[int, ...]] = []
    final: list[int] = []
    for i, (rank, how) in enumerate(choice):
        a, e = int(plan.ranked[i, 0]), int(plan.escalate[i, how])
        b = int(plan.ranked[i, rank]) if rank > 0 else -1
        if b < 0 or e == a:
            executed.append((a,))
            final.append(a)
            continue
        key_a = answer(i, a)
        if key_a is None:  # nothing to compare a second opinion with: escalate at once
            executed.append((a, e))
            final.append(e)
            continue
        key_b = answer(i, b)
        if key_a == key_b:
            executed.append((a, b))
            final.append(a)
        elif e == b:
            executed.append((a, b))
            final.append(b)
        else:
            executed.append((a, b, e))
            final.append(e)
    return executed, final


def fit_gate(
    plan: CascadePlan,
    groups: Sequence[str],
    score: np.ndarray,
    cost: np.ndarray,
    answer: Answer,
    lam: float,
) -> dict[str, Choice]:
    """Per group of training items (a benchmark, or a domain): the second opinion and escalation
    whose cascade has the best mean reward (score - λ·cost), where that beats calling the first
    pair alone.

    score [B, P] recorded, cost [B, P] recorded / cost_ref. Groups left out get no cascade.
    """
    rows = np.arange(len(groups))
    first = plan.ranked[:, 0]
    plain = score[rows, first] - lam * cost[rows, first]
    labels = np.asarray(groups)
    best: dict[str, tuple[float, Choice]] = {}
    for rank in range(1, plan.ranked.shape[1]):
        for how in range(plan.escalate.shape[1]):
            executed, final = run_cascade(plan, [(rank, how)] * len(groups), answer)
            reward = np.array([score[i, final[i]] - lam * sum(cost[i, j] for j in executed[i]) for i in rows])
            for group in set(groups):
                gain = float((reward - plain)[labels == group].mean())
                if gain > best.get(str(group), (0.0, (0, 0)))[0]:
                    best[str(group)] = (gain, (rank, how))
    return {group: choice for group, (_, choice) in best.items()}


def fit_gates(
    net: PolicyNet, batch: EpisodeBatch, benchmarks: Sequence[str], responses: Sequence[Sequence[str | None]],
    lams: Sequence[float], max_steps: int,
) -> dict[float, dict[str, Choice]]:  # fmt: skip
    """The gate at each λ, per benchmark, on training items' recorded outcomes (`batch` with them)."""
    from orchestrator.learning.responses import answer_key

    assert batch.score is not None and batch.cost is not None
    score, cost = batch.score.double().numpy(), batch.cost.double().numpy()
    return {
        lam: fit_gate(
            plan_cascade(net, batch, lam, max_steps),
            benchmarks,
            score,
            cost,
            lambda i, j: answer_key(responses[i][j]),
            lam,
        )  # fmt: skip
        for lam in lams
    }


def gates_payload(gates: dict[float, dict[str, Choice]]) -> dict[str, dict[str, list[int]]]:
    """Gates as a checkpoint stores them: {"<λ>": {benchmark: [second opinion, escalation]}}."""
    return {repr(float(lam)): {b: list(choice) for b, choice in gate.items()} for lam, gate in gates.items()}


def gates_from_payload(payload: dict[str, dict[str, list[int]]]) -> dict[float, dict[str, Choice]]:
    return {float(lam): {b: (int(c[0]), int(c[1])) for b, c in gate.items()} for lam, gate in payload.items()}
