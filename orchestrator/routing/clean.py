"""Clean splits: no test item whose text a router has seen.

Recorded benchmarks repeat themselves. The same prompt can sit in a source's train and
test files, or in two sources at once, with the same models' recorded scores; a router
tested on it is tested on an answer it was shown. Every split the project makes (the
upstream split, --train/--outcomes, the probe, the unseen-pool splits, composites) passes
its test side through `unseen_rows`: a test item whose normalized text is among the train
items or the probe leaves the test. Text, not keys: two sources never share an item id.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from orchestrator.routing.table import OutcomeTable

_SPACE = re.compile(r"\s+")


def normalized(text: str) -> str:
    """The text compared across splits: Unicode NFKC, case folded, runs of white space as one."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def texts_of(tables: Iterable[OutcomeTable]) -> set[str]:
    """The normalized prompts of every item of `tables`."""
    return {normalized(prompt) for table in tables for prompt in table.prompts}


def unseen_rows(prompts: Sequence[str], seen: set[str]) -> np.ndarray:
    """int64 indices of the prompts whose normalized text is not in `seen`."""
    return np.asarray([i for i, prompt in enumerate(prompts) if normalized(prompt) not in seen], dtype=np.int64)


def without_seen(test: OutcomeTable, *seen: OutcomeTable) -> OutcomeTable:
    """`test` less every item whose normalized text is an item of a `seen` table (train, probe)."""
    keep = unseen_rows(test.prompts, texts_of(seen))
    return test if len(keep) == test.n_items else test.rows(keep)


def leaked(test: OutcomeTable, *seen: OutcomeTable) -> list[str]:
    """The item ids of `test` whose normalized text is in a `seen` table (empty for a clean split)."""
    texts = texts_of(seen)
    return [item for item, prompt in zip(test.item_ids, test.prompts, strict=True) if normalized(prompt) in texts]
