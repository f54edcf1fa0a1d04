"""The batched episodes training plays, as a reference for the core's decisions.

Evaluation routes every item through the orchestration core; these play the same items as
batched tensors (`learning.episode.rollout`, `learning.cascade`), so tests can check that the
core, item by item, decides as training's episodes do.
"""

from __future__ import annotations

from orchestrator.learning.cascade import plan_cascade, run_cascade
from orchestrator.learning.dataset import encode
from orchestrator.learning.episode import EpisodeBatch
from orchestrator.learning.method import LearnedMethod, route_batch
from orchestrator.learning.model import PolicyNet
from orchestrator.learning.responses import answer_key
from orchestrator.routing.methods import CASCADE_OFFSET, Routes, executed_response
from orchestrator.routing.table import OutcomeTable


def route_cascade(
    net: PolicyNet, batch: EpisodeBatch, test: OutcomeTable, lam: float, gate: dict[str, tuple[int, int]], steps: int
) -> Routes:
    """The agreement cascade at λ, batched: on in the benchmarks where the gate switched it on."""
    choice = [gate.get(b, (0, 0)) for b in test.benchmarks]
    executed, final = run_cascade(
        plan_cascade(net, batch, lam, steps), choice, lambda i, j: answer_key(executed_response(test, i, j))
    )
    return Routes(executed=executed, final=final)


def method_routes(method: LearnedMethod, test: OutcomeTable, knob: float) -> Routes:
    """A fitted method's routes at a knob, played as batched episodes."""
    assert method.net is not None and method.context is not None
    lam = knob - CASCADE_OFFSET if knob >= CASCADE_OFFSET else knob
    batch = encode(test, method._embed(test), method.context, with_outcomes=False)
    steps = method.config.sft.max_steps
    gate = method.cascade_gate(knob)
    if gate is not None:
        return route_cascade(method.net, batch, test, lam, gate, steps)
    return route_batch(method.net, batch, test, lam, max_steps=steps)
