"""Composite tasks built from recorded items: 2 to 6 parts, one domain or several, one source
or several, and nested (a part that is itself a composite), so decomposition can be learned
offline with every part answered by a real recorded outcome.

A composite never mixes sides: `build_split` draws the train composites from the table's
train items and the test composites from its test items whose text no train item has, so
no test part is seen in training.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from orchestrator.embedding import question_of
from orchestrator.routing.clean import normalized, texts_of
from orchestrator.routing.table import OutcomeTable

SAME_DOMAIN = "same_domain"
MIXED_DOMAIN = "mixed_domain"


@dataclass(frozen=True)
class Composite:
    """A task made of parts: each a row of the outcome table (a recorded item) or a composite."""

    key: str
    parts: tuple[int | Composite, ...]
    kind: str  # SAME_DOMAIN or MIXED_DOMAIN, over all its leaves
    cross_source: bool  # its leaves come from more than one source

    def leaves(self) -> tuple[int, ...]:
        """The table rows under it, depth first."""
        out: list[int] = []
        for part in self.parts:
            out.extend(part.leaves() if isinstance(part, Composite) else (part,))
        return tuple(out)

    @property
    def depth(self) -> int:
        """1 for parts that are all items; 2 when a part is a composite of items."""
        return 1 + max((part.depth for part in self.parts if isinstance(part, Composite)), default=0)


@dataclass(frozen=True)
class CompositeConfig:
    """How composites are drawn."""

    min_parts: int = 2  # parts per composite (a nested part counts as one)
    max_parts: int = 6
    mixed_share: float = 0.5  # share of composites whose leaves span at least two domains
    cross_source_share: float = 0.25  # share drawn across sources (where the side has two)
    nested_share: float = 0.25  # share with one part that is itself a composite of 2 or 3 items

    def __post_init__(self) -> None:
        if not 2 <= self.min_parts <= self.max_parts:
            raise ValueError(f"parts must satisfy 2 <= min_parts <= max_parts, not {self.min_parts}..{self.max_parts}")
        for name in ("mixed_share", "cross_source_share", "nested_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], not {getattr(self, name)}")


def composite_text(parts: Sequence[str]) -> str:
    """The task a composite poses, as the studio writes one: each part's own question."""
    return "Answer each part:\n\n" + "\n\n".join(f"Part {n}: {question_of(p)}" for n, p in enumerate(parts, 1))


def domain_of(composite: Composite, table: OutcomeTable) -> str:
    """The composite's one domain, or "" for several (as a composite task's is set)."""
    domains = {table.domains[leaf] for leaf in composite.leaves()}
    return domains.pop() if len(domains) == 1 else ""


def text_of(composite: Composite, table: OutcomeTable) -> str:
    return composite_text(
        [text_of(p, table) if isinstance(p, Composite) else table.prompts[p] for p in composite.parts]
    )


def build_composites(
    table: OutcomeTable, rows: Sequence[int], *, count: int, seed: int, config: CompositeConfig | None = None,
    prefix: str = "c",
) -> list[Composite]:  # fmt: skip
    """`count` composites of the given rows, drawn with `seed`. An item may recur across
    composites, never twice in one. Raises ValueError when the rows cannot make one."""
    config = config or CompositeConfig()
    chosen = np.asarray(sorted({int(r) for r in rows}), dtype=int)
    if len(chosen) < config.min_parts:
        raise ValueError(f"{len(chosen)} items cannot make a composite of {config.min_parts} parts")
    rng = np.random.default_rng(seed)
    draw = _Draw(table, chosen, rng)
    out = []
    for n in range(count):
        parts = int(rng.integers(config.min_parts, config.max_parts + 1))
        mixed = bool(rng.random() < config.mixed_share) and draw.can_mix
        cross = bool(rng.random() < config.cross_source_share) and draw.can_cross
        nested = bool(rng.random() < config.nested_share)
        leaves = draw.leaves(parts + (int(rng.integers(1, 3)) if nested else 0), mixed=mixed, cross=cross)
        out.append(_assemble(f"{prefix}{n}", leaves, parts, nested, table, rng))
    return out


def build_split(
    table: OutcomeTable, *, train_count: int, test_count: int, seed: int, config: CompositeConfig | None = None
) -> tuple[list[Composite], list[Composite]]:
    """Train composites from the train items, test composites from the test items (the
    table's recorded split; a seeded 80/20 of the items that have none), less the test items
    whose text is a train item's (`routing.clean`)."""
    rng = np.random.default_rng(seed)
    unsplit = np.flatnonzero([s not in ("train", "test") for s in table.splits])
    to_test = set(unsplit[rng.random(len(unsplit)) < 0.2].tolist())
    test = [i for i, s in enumerate(table.splits) if s == "test" or i in to_test]
    train = sorted(set(range(table.n_items)) - set(test))
    seen = texts_of([table.rows(train)])
    test = [i for i in test if normalized(table.prompts[i]) not in seen]
    return (
        build_composites(table, train, count=train_count, seed=seed, config=config, prefix="train"),
        build_composites(table, test, count=test_count, seed=seed + 1, config=config, prefix="test"),
    )


class _Draw:
    """Draws leaves of one domain or several, from one source or several."""

    def __init__(self, table: OutcomeTable, rows: np.ndarray, rng: np.random.Generator) -> None:
        self.rng = rng
        self.domain = np.asarray(table.domains, dtype=object)[rows]
        self.source = np.asarray(table.sources, dtype=object)[rows]
        self.rows = rows
        self.can_cross = len(set(self.source)) > 1
        self.can_mix = any(len(set(self.domain[self.source == s])) > 1 for s in set(self.source)) or self.can_cross

    def leaves(self, n: int, *, mixed: bool, cross: bool) -> list[int]:
        for _ in range(100):
            pool = np.ones(len(self.rows), dtype=bool)
            if not cross:  # one source, picked by its share of the items
                pool &= self.source == self.source[self.rng.integers(len(self.rows))]
            if not mixed:  # one domain of that pool
                pool &= self.domain == self.domain[self.rng.choice(np.flatnonzero(pool))]
            candidates = np.flatnonzero(pool)
            if len(candidates) < n:
                continue
            picked = self.rng.choice(candidates, size=n, replace=False)
            if mixed and len(set(self.domain[picked])) < 2:
                continue
            if cross and len(set(self.source[picked])) < 2:
                continue
            return [int(self.rows[i]) for i in picked]
        raise ValueError(f"no {n} items of the kind asked for (mixed={mixed}, cross={cross}) in 100 draws")


def _assemble(
    key: str, leaves: list[int], parts: int, nested: bool, table: OutcomeTable, rng: np.random.Generator
) -> Composite:
    def composite(key: str, members: Sequence[int | Composite]) -> Composite:
        flat = [leaf for m in members for leaf in (m.leaves() if isinstance(m, Composite) else (m,))]
        kind = SAME_DOMAIN if len({table.domains[i] for i in flat}) == 1 else MIXED_DOMAIN
        return Composite(key, tuple(members), kind, len({table.sources[i] for i in flat}) > 1)

    members: list[int | Composite] = list(leaves[:parts])
    if nested:
        at = int(rng.integers(parts))
        inner = [members[at], *leaves[parts:]]
        members[at] = composite(f"{key}.{at + 1}", inner)
    return composite(key, members)
