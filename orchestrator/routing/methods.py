"""The protocol every routing method implements, baselines and the learned policy alike.

Contract:
- `fit(train, seed=..., probe=None)`: when `probe` is None, the test table has the same
  pair columns as `train`, in the same order. When the pool is unseen, `probe` has exactly
  the test table's columns with K revealed items, and the method calibrates on it.
- `route(test, knob=...)`: for each test item, the pair columns executed in order and the
  one whose score counts. A method routes only to pairs available on that item
  (`test.available()`); the evaluation scores any other choice 0 at the maximum cost.
- A method never reads a test item's recorded scores or costs. It may estimate a cost
  (prices x estimated tokens); the only outcome it may see is the response of a pair it
  executed, through `executed_response`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from orchestrator.routing.table import OutcomeTable

# A method may offer two kinds of operating point on one knob axis: a knob at or above this
# offset means "the same trade-off, knob - CASCADE_OFFSET, run as a cascade" (the learned
# policy's agreement cascade). `knob_label` writes either kind for people.
CASCADE_OFFSET = 100.0


def knob_label(knob: float) -> str:
    """λ=0.05, or λ=0.05+cascade for a cascade knob."""
    if knob >= CASCADE_OFFSET:
        return f"λ={knob - CASCADE_OFFSET:g}+cascade"
    return f"λ={knob:g}"


@dataclass(frozen=True)
class Routes:
    """The decisions for every test item."""

    executed: list[tuple[int, ...]]  # per item: pair columns called, in order; cost = sum of their costs
    final: list[int]  # per item: the column whose score counts (one of executed)

    def __post_init__(self) -> None:
        if len(self.executed) != len(self.final):
            raise ValueError("executed and final must have one entry per item")
        for calls, last in zip(self.executed, self.final, strict=True):
            if last not in calls:
                raise ValueError(f"final column {last} was not executed ({calls})")

    @classmethod
    def single(cls, columns: list[int]) -> Routes:
        """One call per item: the chosen column is both executed and final."""
        return cls(executed=[(int(j),) for j in columns], final=[int(j) for j in columns])


class NotApplicable(Exception):
    """Raised by `fit` when a method cannot run on this data (e.g. no composite tasks); the message says why."""


class Method(Protocol):
    """A router: fit on recorded outcomes, then route unseen items."""

    name: str

    @property
    def knobs(self) -> tuple[float, ...]:
        """Values swept for the frontier (λ, threshold...), read after `fit`; () = a single point (knob None)."""
        ...

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None: ...

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes: ...


def executed_response(test: OutcomeTable, item: int, col: int) -> str | None:
    """The response a pair returns when executed on an item: what a cascade may look at.

    Executing a pair reveals its response text, not its recorded score; this is the one
    legitimate read of a test item's outcome.
    """
    return test.responses[item][col]
