"""Helpers shared by the importers: the import log, JSON readers and the cost rule."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.outcomes import cost_from_prices, estimate_tokens, read_prices

# model -> {"input_per_mtok": USD, "output_per_mtok": USD}, the format of data/outcomes/prices.json.
Prices = dict[str, dict[str, float]]


@dataclass
class ImportLog:
    """What an importer left out (and why), and what it noticed but kept."""

    skipped: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None


def read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def load_prices(path: Path | None) -> Prices:
    """The price table at `path`, or an empty one when no path is given."""
    if path is None:
        return {}
    return {model: dict(entry) for model, entry in read_prices(path).items()}


def estimated_usage(model: str, prompt: str, response: str | None, prices: Prices) -> Usage:
    """Tokens estimated from the recorded text (4 characters a token) and the cost they imply.

    Only for sources that record neither tokens nor cost. Everything stays None when the
    model has no price in the table or no response was recorded: nothing is invented.
    """
    price = prices.get(model)
    if price is None or response is None:
        return Usage()
    prompt_tokens, completion_tokens = estimate_tokens(prompt), estimate_tokens(response)
    return Usage(prompt_tokens, completion_tokens, cost_from_prices(prompt_tokens, completion_tokens, price))
