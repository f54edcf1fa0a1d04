"""Pulling the final answer out of a model's free-form reply."""

from __future__ import annotations

import re

_HASHES = re.compile(r"####\s*(.+)")
_ANSWER_IS = re.compile(
    r"(?:final\s+answer|the\s+answer|answer)\s*(?:is|:|=)\s*:?\s*(.+)",
    re.IGNORECASE,
)
_FINISH = re.compile(r"Finish\[(.*?)\]", re.DOTALL)


def extract_final_answer(text: str) -> str:
    """The final answer in `text`: after the last `####`, inside the last `\\boxed{}`, after
    the last "the answer is" / "Answer:", or else the whole text, stripped.

    >>> extract_final_answer("6 * 7 = 42.\\n#### 42")
    '42'
    >>> extract_final_answer("So $x = \\\\boxed{\\\\frac{1}{2}}$.")
    '\\\\frac{1}{2}'
    >>> extract_final_answer("The answer is 42.")
    '42'
    """
    text = str(text)
    if hashes := _HASHES.findall(text):
        return _tidy(hashes[-1])
    if (boxed := last_boxed(text)) is not None:
        return boxed.strip()
    if finished := _FINISH.findall(text):
        return _tidy(finished[-1])
    if stated := _ANSWER_IS.findall(text):
        return _tidy(stated[-1])
    return text.strip()


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` (or `\\fbox{...}`), braces balanced, or None."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    rest = text[start:].removeprefix("\\boxed").removeprefix("\\fbox")
    if not rest.startswith("{"):  # "\boxed 5"
        match = re.match(r"\s+([^\s$]+)", rest)
        return match.group(1) if match else None
    depth = 0
    for i, char in enumerate(rest):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            return rest[1:i]
    return None


def _tidy(answer: str) -> str:
    """Drop what wraps a stated answer: markdown bold, surrounding $, a closing full stop."""
    answer = answer.strip().strip("*").strip()
    if answer.startswith("$") and answer.endswith("$") and len(answer) > 1:
        answer = answer.strip("$").strip()
    answer = answer.rstrip(".").strip()
    if re.fullmatch(r"\$\s*-?[\d.,]+", answer):  # a price: "$18"
        answer = answer.lstrip("$").strip()
    return answer
