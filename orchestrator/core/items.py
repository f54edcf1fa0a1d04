"""A composite task's items as the core walks them: a recorded item, or a nested composite
(`{"items": [...]}`). Building them from a table, and splitting them into subtasks, is the
composite package's (`orchestrator.composite.items`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def is_composite(entry: Mapping[str, Any]) -> bool:
    return bool(entry.get("items"))


def leaves(items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The recorded items under `items`, depth first."""
    out: list[Mapping[str, Any]] = []
    for entry in items:
        out.extend(leaves(entry["items"]) if is_composite(entry) else (entry,))
    return out


def item_ids(items: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(leaf["item_id"]) for leaf in leaves(items)]


def composite_answer(answers: Sequence[str]) -> str:
    """One call's answer to several parts, part by part."""
    return "\n\n".join(f"Part {n}: {answer}" for n, answer in enumerate(answers, 1))
