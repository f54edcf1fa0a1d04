"""Chance-corrected agreement between labelers: Cohen's κ for two, Fleiss' κ for more.

Both are `(p_o - p_e) / (1 - p_e)`: observed agreement beyond what chance would give,
as a share of the agreement chance leaves room for. 1 is perfect agreement, 0 what
chance gives, below 0 worse than chance.

The degenerate case: when every label is the same category, chance agreement `p_e` is 1
and κ is 0/0. Observed agreement is then necessarily 1 as well, and both functions
return 1.0 (the labelers never disagreed) instead of raising or returning NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """Cohen's κ of two labelers; `a[i]` and `b[i]` are their labels of item i."""
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa needs one label per item from each labeler; got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        raise ValueError("cohen_kappa needs at least one item")
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    return _kappa(observed, expected)


def fleiss_kappa(ratings: Sequence[Sequence[str]]) -> float:
    """Fleiss' κ; `ratings[i]` holds the labels item i got, one per rater.

    Every item must have the same number of raters, at least two (which raters they are
    may differ from item to item).
    """
    if not ratings:
        raise ValueError("fleiss_kappa needs at least one item")
    raters = len(ratings[0])
    if raters < 2:
        raise ValueError(f"fleiss_kappa needs at least 2 raters per item; item 0 has {raters}")
    uneven = [i for i, row in enumerate(ratings) if len(row) != raters]
    if uneven:
        shown = ", ".join(f"item {i} has {len(ratings[i])}" for i in uneven[:5])
        raise ValueError(f"fleiss_kappa needs the same number of raters per item ({raters}, as item 0); {shown}")
    totals: Counter[str] = Counter()
    agreement = 0.0
    for row in ratings:
        counts = Counter(row)
        totals.update(counts)
        # P_i: the share of rater pairs on item i that agree.
        agreement += (sum(c * c for c in counts.values()) - raters) / (raters * (raters - 1))
    observed = agreement / len(ratings)
    all_labels = len(ratings) * raters
    expected = sum((count / all_labels) ** 2 for count in totals.values())
    return _kappa(observed, expected)


def _kappa(observed: float, expected: float) -> float:
    if math.isclose(expected, 1.0):
        # One category only: chance explains everything, and the labels all agree.
        return 1.0
    return (observed - expected) / (1.0 - expected)
