"""The outcome table: recorded outcomes as dense [item, pair] arrays.

One row per item (keyed by (source, item_id)), one column per (model, primitive) pair,
sorted. A cell that was never recorded is NaN in `score`, and NaN in `cost` also where a
recording has no cost and no price is known for its model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from orchestrator.outcomes import OutcomeFormatError, OutcomeRecord, cost_from_prices, read_outcomes, read_prices
from orchestrator.routing.clean import without_seen

Pair = tuple[str, str]  # (model, primitive)


@dataclass(frozen=True)
class OutcomeTable:
    """Recorded outcomes of items x (model, primitive) pairs.

    All arrays are float64 [n_items, n_pairs]; NaN means no recording (or, for cost, no
    recording or no price).
    """

    item_ids: list[str]
    prompts: list[str]
    benchmarks: list[str]
    domains: list[str]
    splits: list[str | None]
    sources: list[str]
    pairs: list[Pair]  # columns, sorted
    score: np.ndarray  # [n_items, n_pairs] in [0, 1]
    cost: np.ndarray  # [n_items, n_pairs] USD
    tokens_in: np.ndarray  # [n_items, n_pairs]
    tokens_out: np.ndarray  # [n_items, n_pairs]
    responses: list[list[str | None]]  # [n_items][n_pairs]

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @property
    def models(self) -> list[str]:
        """The distinct models of the columns, sorted."""
        return sorted({model for model, _ in self.pairs})

    def rows(self, index: Sequence[int] | np.ndarray) -> OutcomeTable:
        """The table restricted to the items at `index`, in that order."""
        idx = np.asarray(index, dtype=np.int64).reshape(-1)
        picked = idx.tolist()
        return OutcomeTable(
            item_ids=[self.item_ids[i] for i in picked],
            prompts=[self.prompts[i] for i in picked],
            benchmarks=[self.benchmarks[i] for i in picked],
            domains=[self.domains[i] for i in picked],
            splits=[self.splits[i] for i in picked],
            sources=[self.sources[i] for i in picked],
            pairs=list(self.pairs),
            score=self.score[idx],
            cost=self.cost[idx],
            tokens_in=self.tokens_in[idx],
            tokens_out=self.tokens_out[idx],
            responses=[list(self.responses[i]) for i in picked],
        )

    def columns(self, index: Sequence[int] | np.ndarray) -> OutcomeTable:
        """The table restricted to the pairs at `index`, in that order."""
        idx = np.asarray(index, dtype=np.int64).reshape(-1)
        picked = idx.tolist()
        return OutcomeTable(
            item_ids=list(self.item_ids),
            prompts=list(self.prompts),
            benchmarks=list(self.benchmarks),
            domains=list(self.domains),
            splits=list(self.splits),
            sources=list(self.sources),
            pairs=[self.pairs[j] for j in picked],
            score=self.score[:, idx],
            cost=self.cost[:, idx],
            tokens_in=self.tokens_in[:, idx],
            tokens_out=self.tokens_out[:, idx],
            responses=[[row[j] for j in picked] for row in self.responses],
        )

    def available(self) -> np.ndarray:
        """bool [n_items, n_pairs]: the pair was recorded on the item with a known cost."""
        known: np.ndarray = ~np.isnan(self.score) & ~np.isnan(self.cost)
        return known

    def keys(self) -> list[tuple[str, str]]:
        """The (source, item_id) of every row."""
        return list(zip(self.sources, self.item_ids, strict=True))


def default_prices(outcomes: Sequence[Path], given: Path | None) -> Path | None:
    """`given`, else the prices.json beside the first outcome file when there is one."""
    if given is not None or not outcomes:
        return given
    beside = Path(outcomes[0]).parent / "prices.json"
    return beside if beside.is_file() else None


def load_routable(paths: Sequence[str | Path], prices: Path | None = None) -> OutcomeTable:
    """`load_table`, keeping the items with at least one pair of known score and cost (the
    ones a router can be trained or tested on). OutcomeFormatError when there are none."""
    table = load_table(paths, prices=prices)
    table = table.rows(np.flatnonzero(table.available().any(axis=1)))
    if table.n_items == 0:
        names = ", ".join(str(p) for p in paths)
        raise OutcomeFormatError(f"{names}: no item has a pair with a recorded score and a known cost (--prices?)")
    return table


def load_table(paths: Sequence[str | Path], prices: Path | None = None) -> OutcomeTable:
    """Read outcome files into one table (`table_from_records` on all their records).

    A record without a cost is priced from `prices` (a prices.json); without a price its
    cost stays NaN.
    """
    price_map = read_prices(prices) if prices is not None else {}
    return table_from_records(chain.from_iterable(read_outcomes(path) for path in paths), price_map)


def table_from_records(
    records: Iterable[OutcomeRecord], prices: Mapping[str, Mapping[str, float]] | None = None
) -> OutcomeTable:
    """Outcome records as one table; items keyed by (source, item_id), in order of first
    appearance, pairs sorted.

    A record without a cost is priced from `prices` (model -> $/Mtok in and out) at its
    recorded or estimated tokens; without a price its cost stays NaN. Where several records
    give one cell, the last counts. An item's split is the one most of its records carry
    (RouterBench has items whose halves sit in two split files).
    """
    price_map = prices or {}
    item_index: dict[tuple[str, str], int] = {}
    meta: list[tuple[str, str, str, str]] = []  # (prompt, benchmark, domain, source)
    split_votes: list[Counter[str | None]] = []
    cells: dict[tuple[int, Pair], tuple[float, float, float, float, str | None]] = {}
    for record in records:
        key = (record.source, record.item_id)
        row = item_index.get(key)
        if row is None:
            row = item_index[key] = len(meta)
            meta.append((record.prompt, record.benchmark, record.domain, record.source))
            split_votes.append(Counter())
        split_votes[row][record.split] += 1
        cost = record.cost_usd
        if cost is None and record.model in price_map:
            cost = cost_from_prices(record.tokens_in, record.tokens_out, price_map[record.model])
        cells[(row, (record.model, record.primitive))] = (
            float(record.score),
            float("nan") if cost is None else float(cost),
            float(record.tokens_in),
            float(record.tokens_out),
            record.response,
        )

    pairs = sorted({pair for _, pair in cells})
    column = {pair: j for j, pair in enumerate(pairs)}
    n, m = len(meta), len(pairs)
    score, costs, tokens_in, tokens_out = (np.full((n, m), np.nan) for _ in range(4))
    responses: list[list[str | None]] = [[None] * m for _ in range(n)]
    for (row, pair), (s, c, ti, to, response) in cells.items():
        j = column[pair]
        score[row, j], costs[row, j], tokens_in[row, j], tokens_out[row, j] = s, c, ti, to
        responses[row][j] = response

    keys = list(item_index)
    return OutcomeTable(
        item_ids=[item_id for _, item_id in keys],
        prompts=[p for p, _, _, _ in meta],
        benchmarks=[b for _, b, _, _ in meta],
        domains=[d for _, _, d, _ in meta],
        splits=[votes.most_common(1)[0][0] for votes in split_votes],
        sources=[s for _, _, _, s in meta],
        pairs=pairs,
        score=score,
        cost=costs,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        responses=responses,
    )


def split_table(table: OutcomeTable, *, seed: int, test_fraction: float = 0.2) -> tuple[OutcomeTable, OutcomeTable]:
    """(train, test): the upstream split where every item has one, else a seeded split by item.

    Clean (`routing.clean`): a test item whose text is also a train item's leaves the test.
    """
    if table.n_items and all(split is not None for split in table.splits):
        splits = np.array(table.splits)
        train_idx, test_idx = np.flatnonzero(splits == "train"), np.flatnonzero(splits == "test")
        if len(train_idx) and len(test_idx):
            train = table.rows(train_idx)
            return train, without_seen(table.rows(test_idx), train)
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), not {test_fraction}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(table.n_items)
    n_test = max(1, round(test_fraction * table.n_items)) if table.n_items > 1 else 0
    train = table.rows(np.sort(order[n_test:]))
    return train, without_seen(table.rows(np.sort(order[:n_test])), train)


def probe_split(table: OutcomeTable, *, k: int, seed: int) -> tuple[OutcomeTable, OutcomeTable]:
    """(probe, rest): K seeded items whose outcomes are revealed for calibration, and the others.

    Probe items are drawn among items where every column is available where possible, so
    each model gets K revealed outcomes. The probe counts as train: an item of the rest whose
    text is a probe item's leaves it (`routing.clean`).
    """
    if k < 0:
        raise ValueError(f"k must be non-negative, not {k}")
    if k >= table.n_items:
        raise ValueError(f"probe of {k} items leaves no test items (table has {table.n_items})")
    rng = np.random.default_rng(seed)
    full = table.available().all(axis=1)
    complete, partial = np.flatnonzero(full), np.flatnonzero(~full)
    order = np.concatenate([rng.permutation(complete), rng.permutation(partial)])
    probe = np.sort(order[:k])
    rest = np.sort(order[k:])
    revealed = table.rows(probe)
    return revealed, without_seen(table.rows(rest), revealed)
