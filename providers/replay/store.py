"""Where the replay provider finds recordings: in memory (from files) or in Postgres."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from orchestrator.outcomes import OutcomeRecord, prompt_key, read_outcomes


@dataclass(frozen=True)
class Recording:
    """One recorded (item, model, primitive) outcome, as replay serves it."""

    source: str
    item_id: str
    model: str
    primitive: str
    response: str | None
    score: float
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    latency_s: float | None
    parts: tuple[Recording, ...] = ()  # a composite answered whole: the recordings of its parts
    tokens_recorded: tuple[bool, bool] = (True, True)  # (prompt, completion): False where estimated


def recording_from(record: OutcomeRecord) -> Recording:
    return Recording(
        source=record.source,
        item_id=record.item_id,
        model=record.model,
        primitive=record.primitive,
        response=record.response,
        score=record.score,
        prompt_tokens=record.tokens_in,
        completion_tokens=record.tokens_out,
        cost_usd=record.cost_usd,
        latency_s=record.latency_s,
        tokens_recorded=(record.prompt_tokens is not None, record.completion_tokens is not None),
    )


class ReplayStore(Protocol):
    def find(self, model: str, primitive: str, *, item_id: str | None, prompt: str) -> Recording | None:
        """The recording for (model, primitive): by item id when given, else by exact prompt."""
        ...


class MemoryStore:
    """Recordings indexed in memory; loads canonical JSONL(.gz) files directly."""

    def __init__(self, records: Iterable[OutcomeRecord] = ()) -> None:
        self._by_item: dict[tuple[str, str, str], Recording] = {}
        self._by_prompt: dict[tuple[str, str, str], Recording] = {}
        self.add(records)

    @classmethod
    def from_files(cls, paths: Iterable[str | Path]) -> MemoryStore:
        store = cls()
        for path in paths:
            store.add(read_outcomes(path))
        return store

    def add(self, records: Iterable[OutcomeRecord]) -> None:
        for record in records:
            recording = recording_from(record)
            self._by_item[(record.model, record.primitive, record.item_id)] = recording
            # The first recording of a prompt wins; the same prompt in two sources is rare.
            self._by_prompt.setdefault((record.model, record.primitive, prompt_key(record.prompt)), recording)

    def __len__(self) -> int:
        return len(self._by_item)

    def find(self, model: str, primitive: str, *, item_id: str | None, prompt: str) -> Recording | None:
        if item_id is not None:
            return self._by_item.get((model, primitive, item_id))
        return self._by_prompt.get((model, primitive, prompt_key(prompt)))
