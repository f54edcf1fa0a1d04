"""Interference, measured: a part's accuracy answered alone against within a composite that
one call answers whole (issue 48).

The composite evaluation assumes that a pair answering several parts in one call scores
each as it does alone, less a constant penalty (docs/evaluation.md). This module holds what
a measurement of that needs, with no I/O (`bench/interference.py` makes the calls):
- `draw` seeded composites of distinct items, an equal share of each size bucket;
- `split_parts` cuts one whole answer at its "Part n" markers, as `composite.build` words
  the task ("Answer each part: ... Part 1: ...");
- `summarize` per size bucket: the parts' accuracy alone (each item's mean over its alone
  samples) and within, the difference and the ratio within / alone, each with a 95%
  bootstrap interval over composites (the parts of one composite share a call, so they are
  resampled together).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

BUCKETS: dict[str, tuple[int, int]] = {"2": (2, 2), "3": (3, 3), "4-6": (4, 6)}  # parts, inclusive
DRAWS = 2000  # bootstrap resamples of the composites
MARKER = re.compile(r"(?im)^\W*part\s*(\d+)\s*[:.)\-]")


def bucket_of(parts: int) -> str:
    """The size bucket of a composite of `parts` parts."""
    for name, (low, high) in BUCKETS.items():
        if low <= parts <= high:
            return name
    raise ValueError(f"no bucket holds {parts} parts; buckets: {', '.join(BUCKETS)}")


def draw(items: int, count: int, *, seed: int) -> list[tuple[int, ...]]:
    """`count` composites as tuples of distinct item indices (of `items`): the buckets take
    turns, a composite's size uniform within its bucket."""
    if count < 0:
        raise ValueError(f"the count of composites must be >= 0, not {count}")
    largest = max(high for _, high in BUCKETS.values())
    if items < largest:
        raise ValueError(f"{items} items cannot make composites of up to {largest} distinct parts")
    rng = np.random.default_rng([seed, 48])
    bounds = list(BUCKETS.values())
    out = []
    for n in range(count):
        low, high = bounds[n % len(bounds)]
        size = int(rng.integers(low, high + 1))
        out.append(tuple(int(i) for i in rng.choice(items, size=size, replace=False)))
    return out


def split_parts(text: str, parts: int) -> list[str | None]:
    """Each part's piece of one answer to a whole composite: the text from its "Part n" marker
    (at a line's start) to the next marker; None for a part with no marker. A marker repeated
    keeps its first piece."""
    marks = [(int(m.group(1)), m.start(), m.end()) for m in MARKER.finditer(text)]
    pieces: list[str | None] = [None] * parts
    for k, (number, _, end) in enumerate(marks):
        if 1 <= number <= parts and pieces[number - 1] is None:
            stop = marks[k + 1][1] if k + 1 < len(marks) else len(text)
            pieces[number - 1] = text[end:stop].strip().lstrip("*").strip()  # markdown: **Part 1:**
    return pieces


@dataclass(frozen=True)
class Within:
    """One composite answered whole: its items and each part's score."""

    items: tuple[int, ...]
    scores: tuple[float, ...]
    found: tuple[bool, ...]  # whether the answer had a piece for the part


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class Bucket:
    """One size bucket's measurement."""

    composites: int
    parts: int
    found: float  # share of parts the whole answer had a piece for
    alone: Interval  # the parts' accuracy alone (each item's mean over its samples)
    within: Interval  # their accuracy within the composite
    difference: Interval  # within - alone
    ratio: Interval  # within / alone: the factor a part keeps of its accuracy

    def as_dict(self) -> dict[str, object]:
        return {
            "composites": self.composites, "parts": self.parts, "found": self.found, "alone": self.alone.as_dict(),
            "within": self.within.as_dict(), "difference": self.difference.as_dict(), "ratio": self.ratio.as_dict(),
        }  # fmt: skip


def summarize(
    within: Sequence[Within], alone: Mapping[int, Sequence[float]], *, seed: int = 0, draws: int = DRAWS
) -> dict[str, Bucket]:
    """Per size bucket with composites: accuracy alone and within, within - alone and
    within / alone, with 95% bootstrap intervals over composites. `alone[item]`: that item's
    scores answered alone (each sample)."""
    rng = np.random.default_rng([seed, 95])
    out: dict[str, Bucket] = {}
    for name in BUCKETS:
        rows = [w for w in within if bucket_of(len(w.items)) == name]
        if not rows:
            continue
        # per composite: the sums over its parts, so a resample of composites adds them up
        got = np.array([sum(w.scores) for w in rows])
        base = np.array([sum(float(np.mean(alone[i])) for i in w.items) for w in rows])
        count = np.array([len(w.items) for w in rows], dtype=float)
        found = sum(sum(w.found) for w in rows)
        picks = rng.integers(0, len(rows), size=(draws, len(rows)))
        g, b, c = got[picks].sum(1), base[picks].sum(1), count[picks].sum(1)
        ratio = np.divide(g, b, out=np.full(draws, np.nan), where=b > 0)
        total, kept = float(count.sum()), float(base.sum())
        out[name] = Bucket(
            composites=len(rows),
            parts=int(total),
            found=found / total,
            alone=_interval(kept / total, b / c),
            within=_interval(float(got.sum()) / total, g / c),
            difference=_interval((float(got.sum()) - kept) / total, (g - b) / c),
            ratio=_interval(float(got.sum()) / kept if kept > 0 else float("nan"), ratio),
        )
    return out


def _interval(value: float, samples: np.ndarray) -> Interval:
    kept = samples[np.isfinite(samples)]
    if kept.size == 0:
        return Interval(float(value), float("nan"), float("nan"))
    low, high = np.percentile(kept, [2.5, 97.5])
    return Interval(float(value), float(low), float(high))
