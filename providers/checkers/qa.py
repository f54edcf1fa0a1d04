"""Short-answer QA (HotpotQA, NQ, TriviaQA): SQuAD-style exact match and token F1."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from providers.checkers.extract import extract_final_answer
from providers.checkers.result import CheckResult

_SPECIAL = {"yes", "no", "noanswer"}


def check_qa(answer: str, gold: Any, *, item: dict[str, Any] | None = None) -> CheckResult:
    """score = token F1, passed = exact match, both after SQuAD normalization; with several
    gold answers (aliases) the best one counts."""
    golds = [str(g) for g in gold] if isinstance(gold, list | tuple) else [str(gold)]
    predicted = extract_final_answer(answer)
    exact = any(normalize_answer(predicted) == normalize_answer(g) for g in golds)
    f1 = max(token_f1(predicted, g) for g in golds) if golds else 0.0
    if exact:
        return CheckResult(score=1.0, passed=True, detail=f"{predicted!r} matches exactly")
    return CheckResult(score=f1, passed=False, detail=f"{predicted!r} vs {golds[0]!r}: F1 {f1:.2f}")


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles (a, an, the), single spaces."""
    text = str(text).lower()
    text = "".join(char for char in text if char not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def token_f1(predicted: str, gold: str) -> float:
    """Token-overlap F1; yes/no/noanswer must match exactly (HotpotQA's rule)."""
    p, g = normalize_answer(predicted), normalize_answer(gold)
    if (p in _SPECIAL or g in _SPECIAL) and p != g:
        return 0.0
    p_tokens, g_tokens = p.split(), g.split()
    common = sum((Counter(p_tokens) & Counter(g_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p_tokens), common / len(g_tokens)
    return 2 * precision * recall / (precision + recall)
