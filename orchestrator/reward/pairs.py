"""Self-supervised preference pairs from recorded outcome tables, with no human in the loop.

Each pair says: on this item, the plan of column `win` is preferred to the plan of column
`lose`. The kinds (`source`) are the ones of docs/reward.md ("Pairs"):
- correct_over_incorrect: the winner was verified right, the loser wrong;
- cheaper_correct: both right, the winner at most 1/`cost_ratio` of the loser's cost;
- specialized_over_base: a trained policy's choice, right, over a random (base) choice
  that was wrong or dearer;
- node_level: the winner's answer agrees with the item's majority answer, the loser's
  does not (no verifier needed).

Pairs are deduplicated (the same item, or a near-duplicate prompt, with the same two
columns) and sources are balanced to a total budget.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from orchestrator.configs import STRICT_KEYS, Fraction, NonNegativeInt, Positive
from orchestrator.learning.responses import answer_key
from orchestrator.routing.table import OutcomeTable

SOURCES = ("correct_over_incorrect", "cheaper_correct", "specialized_over_base", "node_level")
RIGHT = 0.5  # a score at or above this counts as a right answer
GAP = 0.25  # a correct-over-incorrect winner beats the loser's score by at least this


@dataclass(frozen=True)
class PairConfig:
    """How pairs are drawn from a table."""

    __pydantic_config__ = STRICT_KEYS

    per_item: NonNegativeInt = 0  # at most this many pairs of each source per item (all of them when 0)
    cost_ratio: Positive = 1.5  # cheaper_correct: the loser costs at least this many times the winner
    near_duplicate: Fraction = 0.995  # cosine at or above which two prompts count as the same item
    max_pairs: NonNegativeInt = 250_000  # total after balancing (0 = no limit); RouterBench + LLMRouter train: 220,969
    sources: tuple[str, ...] = SOURCES  # the kinds to build


@dataclass(frozen=True)
class TablePairs:
    """Preference pairs over a table's rows and columns; shapes [m]."""

    item: np.ndarray  # int64 row
    win: np.ndarray  # int64 column preferred
    lose: np.ndarray  # int64 column
    source: np.ndarray  # str kind

    def __len__(self) -> int:
        return len(self.item)

    def take(self, index: np.ndarray) -> TablePairs:
        return TablePairs(self.item[index], self.win[index], self.lose[index], self.source[index])

    def counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in zip(*np.unique(self.source, return_counts=True), strict=True)}


def empty_pairs() -> TablePairs:
    none = np.zeros(0, dtype=np.int64)
    return TablePairs(none, none.copy(), none.copy(), np.zeros(0, dtype="<U32"))


def concat(parts: Sequence[TablePairs]) -> TablePairs:
    if not parts:
        return empty_pairs()
    return TablePairs(
        np.concatenate([p.item for p in parts]),
        np.concatenate([p.win for p in parts]),
        np.concatenate([p.lose for p in parts]),
        np.concatenate([p.source.astype("<U32") for p in parts]),
    )


def _from_mask(mask: np.ndarray, source: str) -> TablePairs:
    """Pairs from a bool [n, p(win), p(lose)] mask."""
    item, win, lose = np.nonzero(mask)
    return TablePairs(
        item.astype(np.int64), win.astype(np.int64), lose.astype(np.int64), np.full(len(item), source, dtype="<U32")
    )


def _from_lists(items: list[int], wins: list[int], loses: list[int], source: str) -> TablePairs:
    def ints(values: list[int]) -> np.ndarray:
        return np.asarray(values, dtype=np.int64)

    return TablePairs(ints(items), ints(wins), ints(loses), np.full(len(items), source, dtype="<U32"))


def correct_over_incorrect(table: OutcomeTable) -> TablePairs:
    """Every (right, wrong) column pair of every item."""
    s, ok = table.score, table.available()
    right = ok & (s >= RIGHT)
    wrong = ok & (s < RIGHT)
    gap = s[:, :, None] - s[:, None, :] >= GAP  # [n, p(win), p(lose)]
    return _from_mask(right[:, :, None] & wrong[:, None, :] & gap, "correct_over_incorrect")


def cheaper_correct(table: OutcomeTable, *, cost_ratio: float) -> TablePairs:
    """Both right; the winner costs at most 1/cost_ratio of the loser."""
    s, c, ok = table.score, table.cost, table.available()
    right = ok & (s >= RIGHT)
    cheaper = c[:, :, None] * cost_ratio <= c[:, None, :]
    return _from_mask(right[:, :, None] & right[:, None, :] & cheaper, "cheaper_correct")


def node_level(table: OutcomeTable) -> TablePairs:
    """The winner's answer agrees with the item's majority answer, the loser's does not.

    The majority is the most common normalized answer among the item's recorded
    responses, when at least two give it and no other answer is as common.
    """
    items, wins, loses = [], [], []
    ok = table.available()
    for i, row in enumerate(table.responses):
        keys = [answer_key(r) if ok[i, j] else None for j, r in enumerate(row)]
        counts = Counter(k for k in keys if k is not None)
        top = counts.most_common(2)
        if not top or top[0][1] < 2 or (len(top) > 1 and top[1][1] == top[0][1]):
            continue
        majority = top[0][0]
        agree = [j for j, k in enumerate(keys) if k == majority]
        disagree = [j for j, k in enumerate(keys) if k is not None and k != majority]
        for w in agree:
            for lo in disagree:
                items.append(i)
                wins.append(w)
                loses.append(lo)
    return _from_lists(items, wins, loses, "node_level")


def specialized_over_base(table: OutcomeTable, chosen: np.ndarray, *, rng: np.random.Generator) -> TablePairs:
    """A trained policy's choice `chosen` [n] (column, -1 = none) over one random available column.

    Kept where the trained choice was right and the random one wrong, or right but at
    least as dear.
    """
    ok = table.available()
    items, wins, loses = [], [], []
    for i in range(table.n_items):
        j = int(chosen[i])
        cols = np.flatnonzero(ok[i])
        if j < 0 or not ok[i, j] or len(cols) < 2:
            continue
        base = int(rng.choice(cols[cols != j]))
        if table.score[i, j] < RIGHT:
            continue
        if table.score[i, base] < RIGHT or table.cost[i, base] >= table.cost[i, j]:
            items.append(i)
            wins.append(j)
            loses.append(base)
    return _from_lists(items, wins, loses, "specialized_over_base")


def build_pairs(
    table: OutcomeTable,
    *,
    config: PairConfig,
    seed: int,
    embeddings: np.ndarray | None = None,
    chosen: np.ndarray | None = None,
) -> TablePairs:
    """The configured kinds of pairs for `table`, capped per item, deduplicated and balanced.

    `embeddings` [n, e] (L2-normalized) enable near-duplicate removal; `chosen` [n] (a
    trained policy's columns) enables specialized_over_base.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for source in config.sources:
        if source == "correct_over_incorrect":
            part = correct_over_incorrect(table)
        elif source == "cheaper_correct":
            part = cheaper_correct(table, cost_ratio=config.cost_ratio)
        elif source == "node_level":
            part = node_level(table)
        elif source == "specialized_over_base":
            if chosen is None:
                continue
            part = specialized_over_base(table, chosen, rng=rng)
        else:
            raise ValueError(f"unknown pair source {source!r}; known: {', '.join(SOURCES)}")
        parts.append(cap_per_item(part, config.per_item, rng))
    pairs = dedupe(
        concat(parts), canonical_items(embeddings, config.near_duplicate) if embeddings is not None else None
    )
    return balance(pairs, config.max_pairs, rng)


def cap_per_item(pairs: TablePairs, per_item: int, rng: np.random.Generator) -> TablePairs:
    """At most `per_item` random pairs of each item (all when per_item is 0)."""
    if per_item <= 0 or not len(pairs):
        return pairs
    order = rng.permutation(len(pairs))
    rank = np.zeros(len(pairs), dtype=np.int64)
    seen: Counter[int] = Counter()
    for k in order:
        item = int(pairs.item[k])
        rank[k] = seen[item]
        seen[item] += 1
    return pairs.take(np.sort(np.flatnonzero(rank < per_item)))


def canonical_items(embeddings: np.ndarray, threshold: float) -> np.ndarray:
    """int64 [n]: for each item, the first item whose prompt is a near-duplicate of it (itself if none)."""
    n = embeddings.shape[0]
    canon = np.arange(n)
    emb = embeddings.astype(np.float32)
    for start in range(0, n, 1024):
        sims = emb[start : start + 1024] @ emb.T  # [b, n]
        for r in range(sims.shape[0]):
            i = start + r
            earlier = np.flatnonzero(sims[r, :i] >= threshold)
            if len(earlier):
                canon[i] = canon[earlier[0]]
    return canon


def dedupe(pairs: TablePairs, canon: np.ndarray | None) -> TablePairs:
    """One pair per (item or its near-duplicate, win, lose, source), the first kept."""
    items = canon[pairs.item] if canon is not None else pairs.item
    keys = list(zip(items.tolist(), pairs.win.tolist(), pairs.lose.tolist(), pairs.source.tolist(), strict=True))
    first: dict[tuple[int, int, int, str], int] = {}
    for k, key in enumerate(keys):
        first.setdefault(key, k)
    return pairs.take(np.asarray(sorted(first.values()), dtype=np.int64))


def balance(pairs: TablePairs, max_pairs: int, rng: np.random.Generator) -> TablePairs:
    """At most `max_pairs` in all, shared as evenly as the sources allow (a small source keeps all)."""
    if max_pairs <= 0 or len(pairs) <= max_pairs:
        return pairs
    sources = sorted(set(pairs.source.tolist()))
    sizes = {s: int((pairs.source == s).sum()) for s in sources}
    quota, left, open_sources = {}, max_pairs, sorted(sources, key=lambda s: sizes[s])
    while open_sources:
        share = left // len(open_sources)
        source = open_sources.pop(0)
        quota[source] = min(sizes[source], share)
        left -= quota[source]
    keep = [rng.choice(np.flatnonzero(pairs.source == s), size=quota[s], replace=False) for s in sources]
    return pairs.take(np.sort(np.concatenate(keep)))
