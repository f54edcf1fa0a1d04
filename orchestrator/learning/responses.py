"""Features of an executed response: its answer normalized for comparison (`answer_key`), and
its surface (`response_surface`)."""

from __future__ import annotations

import math
import re

import numpy as np

_CHOICE = re.compile(r"^\(?([A-J])(?:[).:,\s]|$)")
_ANSWER_IS = re.compile(r"answer is:?\s*\(?([A-J])\b", re.IGNORECASE)


def answer_key(response: str | None) -> str | None:
    """A normalized answer, so two responses that say the same thing compare equal."""
    if response is None:
        return None
    text = response.strip()
    match = _CHOICE.match(text) or _ANSWER_IS.search(text)
    if match:
        return match.group(1)
    normalized = " ".join(text.lower().split())
    return normalized[:200] or None


def response_surface(response: str | None) -> np.ndarray:
    """float32 [4]: log length, a bare choice letter, contains code, nothing recorded."""
    if response is None:
        return np.array([0.0, 0.0, 0.0, 1.0], dtype=np.float32)
    text = response.strip()
    return np.array(
        [
            math.log1p(len(text)) / 8,
            1.0 if _CHOICE.match(text) else 0.0,
            1.0 if "```" in text or "def " in text else 0.0,
            0.0,
        ],
        dtype=np.float32,
    )
