"""What the core asks of a policy: `act(observation) -> action`. A policy may also have
`act_many(observations) -> actions`, the same actions in one batched pass, which the core uses
to step many runs in lockstep (`step.step_many`). The policies themselves, and the registry
that finds them by name, are outside the core (`orchestrator.policies`)."""

from __future__ import annotations

from typing import Protocol

from orchestrator.core.protocol import Action, Observation


class Policy(Protocol):
    name: str
    # True: an answer leaves its node `answered`, for the policy to accept (Accept) or to ask
    # another pair for a second opinion (Solve); False: the node succeeds with it.
    reviews_answers: bool

    def act(self, observation: Observation) -> Action: ...
