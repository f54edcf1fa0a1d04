"""Multiple-choice answers given as letters A-E."""

from __future__ import annotations

import re
from typing import Any

from providers.checkers.extract import last_boxed
from providers.checkers.result import CheckResult

LETTERS = "ABCDE"
_STATED = re.compile(
    r"(?:answer|option|choice)\s*(?:is|:)?\s*:?\s*(?:option\s*)?(\(?)\s*([A-Ea-e])\s*(\)?)(?![A-Za-z])(.?)",
    re.I,
)
_ALONE = re.compile(r"\(?\s*([A-Ea-e])\s*[).:]?")
_PARENTHESIZED = re.compile(r"\(([A-E])\)")
_LEADING = re.compile(r"^([A-E])[.):]\s")


def extract_choice(text: str) -> str | None:
    """The chosen letter, upper case: from "The answer is b.", "Answer: (C)", "(D)", "\\boxed{A}",
    "E. Paris" or a lone "c"; None when no choice is stated."""
    text = str(text).strip()
    if (boxed := last_boxed(text)) is not None:
        text = re.sub(r"\\text\s*\{([^{}]*)\}", r"\1", boxed).strip()
    if match := _ALONE.fullmatch(text):
        return match.group(1).upper()
    # "answer is C because" counts; a lower-case letter must be marked off ("is (b)", "is b.").
    stated = [
        letter.upper()
        for opened, letter, closed, after in _STATED.findall(text)
        if letter.isupper() or opened or closed or after in ("", ".", ",", ";", "!", "\n")
    ]
    if stated:
        return stated[-1]
    if parenthesized := _PARENTHESIZED.findall(text):
        return str(parenthesized[-1])
    if match := _LEADING.match(text):
        return match.group(1)
    return None


def check_choice(answer: str, gold: Any, *, item: dict[str, Any] | None = None) -> CheckResult:
    """Gold is a letter ("B", "(B)"); the reply's chosen letter must equal it."""
    expected = extract_choice(str(gold))
    if expected is None:
        return CheckResult.of(False, f"the gold answer {gold!r} is not a letter A-E")
    got = extract_choice(answer)
    if got is None:
        return CheckResult.of(False, "no choice letter in the answer")
    if got == expected:
        return CheckResult.of(True, f"{got} is correct")
    return CheckResult.of(False, f"expected {expected}, got {got}")
