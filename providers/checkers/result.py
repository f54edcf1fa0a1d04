"""What every checker returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    score: float
    """In [0, 1]: 1 for a correct answer; partial credit only where the metric has it (F1)."""
    passed: bool
    detail: str
    """A short reason a person can read, e.g. "expected 18, got 17"."""

    @classmethod
    def of(cls, passed: bool, detail: str) -> CheckResult:
        return cls(score=1.0 if passed else 0.0, passed=passed, detail=detail)
