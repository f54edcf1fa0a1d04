"""Reading answers and code out of model output."""

from __future__ import annotations

import re

from providers.checkers.extract import extract_final_answer

_CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


def final_answer(text: str) -> str | None:
    """The stated final answer ('Answer: X', 'the answer is X', '#### X', \\boxed{X}), or the
    whole text when none is stated; None for empty output."""
    return extract_final_answer(text) if text.strip() else None


def whole(text: str) -> str | None:
    return text.strip() or None


def code_block(text: str) -> str:
    """The last fenced Python block, else the whole text (a model that sent bare code)."""
    blocks = _CODE_BLOCK.findall(text)
    return blocks[-1].strip() if blocks else text.strip()


def vote_key(answer: str) -> str:
    """Answers that differ only in case, spacing, trailing dots or commas in numbers vote together."""
    key = re.sub(r"\s+", " ", answer.strip().lower()).rstrip(".")
    if re.fullmatch(r"-?[\d,]+(\.\d+)?", key):
        key = key.replace(",", "")
        if "." in key:
            key = key.rstrip("0").rstrip(".")
    return key
