"""Answer checkers, one per kind of benchmark, chosen by the benchmark's name.

    check("gsm8k", "... #### 18", "18")              -> CheckResult(1.0, True, "18 is correct")
    check("humaneval", completion, item["test"], item=item)

A checker never raises on a bad answer; it says why the answer failed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from workers.checkers.choice import check_choice, extract_choice
from workers.checkers.code import check_code
from workers.checkers.extract import extract_final_answer, last_boxed
from workers.checkers.function_calls import check_function_calls, parse_calls
from workers.checkers.numeric import check_math, check_number, normalize_math, parse_number
from workers.checkers.qa import check_qa, normalize_answer, token_f1
from workers.checkers.result import CheckResult


class Checker(Protocol):
    def __call__(self, answer: str, gold: Any, *, item: dict[str, Any] | None = None) -> CheckResult: ...


_CHECKERS: dict[str, Checker] = {
    **dict.fromkeys(["gsm8k", "mgsm", "svamp", "multiarith", "asdiv"], check_number),
    **dict.fromkeys(["math", "math500", "math_500"], check_math),
    **dict.fromkeys(
        [
            "multiple_choice",
            "mmlu",
            "arc",
            "arc_c",
            "arc_challenge",
            "arc_easy",
            "gpqa",
            "csqa",
            "commonsenseqa",
            "obqa",
            "openbookqa",
            "aqua",
            "aqua_rat",
        ],
        check_choice,
    ),
    **dict.fromkeys(["humaneval", "mbpp"], check_code),
    "bfcl": check_function_calls,
    **dict.fromkeys(["hotpotqa", "nq", "natural_questions", "triviaqa"], check_qa),
}


def benchmark_key(benchmark: str) -> str:
    """ "ARC-Challenge" -> "arc_challenge"; every BFCL category ("bfcl_parallel") -> "bfcl"."""
    key = re.sub(r"[\s\-/]+", "_", benchmark.strip().lower())
    return "bfcl" if key.startswith("bfcl") else key


def checker_for(benchmark: str) -> Callable[..., CheckResult]:
    """The checker for `benchmark`; KeyError naming the known ones when there is none."""
    key = benchmark_key(benchmark)
    if key not in _CHECKERS:
        known = ", ".join(sorted(_CHECKERS))
        raise KeyError(f"No answer checker for benchmark {benchmark!r}. Known benchmarks: {known}.")
    return _CHECKERS[key]


def checker_names() -> list[str]:
    """Every name a task's `checker` may take."""
    return sorted(_CHECKERS)


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
