"""Answer checkers, one per kind of benchmark, chosen by the benchmark's name.

    check("gsm8k", "... #### 18", "18")              -> CheckResult(1.0, True, "18 is correct")
    check("humaneval", completion, item["test"], item=item)

A checker never raises on a bad answer; it says why the answer failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from orchestrator.core.checking import KINDS, benchmark_key, checker_names
from providers.checkers.choice import check_choice, extract_choice
from providers.checkers.code import check_code
from providers.checkers.extract import extract_final_answer, last_boxed
from providers.checkers.function_calls import check_function_calls, parse_calls
from providers.checkers.numeric import check_math, check_number, normalize_math, parse_number
from providers.checkers.qa import check_qa, normalize_answer, token_f1
from providers.checkers.result import CheckResult


class Checker(Protocol):
    def __call__(self, answer: str, gold: Any, *, item: dict[str, Any] | None = None) -> CheckResult: ...


BY_KIND: dict[str, Checker] = {
    "number": check_number,
    "math": check_math,
    "choice": check_choice,
    "code": check_code,
    "function_calls": check_function_calls,
    "qa": check_qa,
}
_CHECKERS: dict[str, Checker] = {name: BY_KIND[kind] for name, kind in KINDS.items()}


def checker_for(benchmark: str) -> Callable[..., CheckResult]:
    """The checker for `benchmark`; KeyError naming the known ones when there is none."""
    key = benchmark_key(benchmark)
    if key not in _CHECKERS:
        known = ", ".join(sorted(_CHECKERS))
        raise KeyError(f"No answer checker for benchmark {benchmark!r}. Known benchmarks: {known}.")
    return _CHECKERS[key]


def check(benchmark: str, answer: str, gold: Any, *, item: dict[str, Any] | None = None) -> CheckResult:
    """Score `answer` against `gold` the way `benchmark` is scored."""
    if gold is None:
        return CheckResult.of(False, "there is no gold answer to check against")
    return checker_for(benchmark)(str(answer or ""), gold, item=item)


__all__ = [
    "CheckResult",
    "Checker",
    "benchmark_key",
    "check",
    "checker_names",
    "check_choice",
    "check_code",
    "check_function_calls",
    "check_math",
    "check_number",
    "check_qa",
    "checker_for",
    "extract_choice",
    "extract_final_answer",
    "last_boxed",
    "normalize_answer",
    "normalize_math",
    "parse_calls",
    "parse_number",
    "token_f1",
]
