"""Importers: convert each recorded-outcome source into the canonical JSONL.gz.

Each module exposes `records(src, **options) -> Iterator[OutcomeRecord]`; SOURCES names
them with the folder each one reads under the shared data directory. Run them with
`python -m workers.importers` (see `__main__.py`). Nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from orchestrator.outcomes import OutcomeRecord
from workers.importers import (
    bbh,
    llmrouter,
    program_of_thoughts,
    reflexion,
    routellm,
    routerarena,
    routerbench,
)

Importer = Callable[..., Iterator[OutcomeRecord]]

# source name -> (importer, folder under the shared data directory)
SOURCES: dict[str, tuple[Importer, str]] = {
    "routerbench": (routerbench.records, "routerbench"),
    "llmrouter": (llmrouter.records, "llmrouter"),
    "routellm": (routellm.records, "routellm"),
    "routerarena": (routerarena.records, "routerarena"),
    "bbh": (bbh.records, "primitives/bbh"),
    "reflexion": (reflexion.records, "primitives/reflexion"),
    "program_of_thoughts": (program_of_thoughts.records, "primitives/program-of-thoughts"),
}
# Options each importer takes beyond `src` and `log`.
OPTIONS: dict[str, frozenset[str]] = {
    "llmrouter": frozenset({"assume_completion_tokens"}),
    "routellm": frozenset({"prices", "gsm8k_test"}),
    "reflexion": frozenset({"prices"}),
    "program_of_thoughts": frozenset({"prices"}),
}


def options_for(source: str, available: dict[str, Any]) -> dict[str, Any]:
    """The subset of `available` options that `source`'s importer accepts."""
    wanted = OPTIONS.get(source, frozenset())
    return {name: value for name, value in available.items() if name in wanted and value is not None}
