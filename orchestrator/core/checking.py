"""Which answer checker scores which benchmark: the names only, so that the studio can
validate and list them without the checkers (`providers.checkers`, some of which run code in
the sandbox, in the workers)."""

from __future__ import annotations

import re

# A benchmark's key (see `benchmark_key`) -> the kind of checker that scores it.
KINDS: dict[str, str] = {
    # "arithmetic": generated sums and products of graded difficulty (bench/local_loop.py).
    **dict.fromkeys(["gsm8k", "mgsm", "svamp", "multiarith", "asdiv", "arithmetic"], "number"),
    **dict.fromkeys(["math", "math500", "math_500"], "math"),
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
        "choice",
    ),  # fmt: skip
    **dict.fromkeys(["humaneval", "mbpp"], "code"),
    "bfcl": "function_calls",
    **dict.fromkeys(["hotpotqa", "nq", "natural_questions", "triviaqa"], "qa"),
}


def benchmark_key(benchmark: str) -> str:
    """ "ARC-Challenge" -> "arc_challenge"; every BFCL category ("bfcl_parallel") -> "bfcl"."""
    key = re.sub(r"[\s\-/]+", "_", benchmark.strip().lower())
    return "bfcl" if key.startswith("bfcl") else key


def checker_names() -> list[str]:
    """Every name a task's `checker` may take."""
    return sorted(KINDS)


def has_checker(benchmark: str) -> bool:
    return benchmark_key(benchmark) in KINDS
