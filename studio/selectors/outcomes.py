"""Reading recorded outcomes: the rows the replay provider answers calls from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Case, Q, Value, When
from django.db.models.functions import Length

from studio.models import RecordedOutcome

FIELDS = (
    "source", "model", "primitive", "item_id", "response", "score", "prompt_tokens", "completion_tokens", "cost_usd",
    "latency_s", "prompt_chars",
)  # fmt: skip


# Imported recordings come first; a collection's (source `collection-<id>`, which may itself
# have replayed them) only where no imported source has the item.
COLLECTED_LAST = Case(When(source__startswith="collection-", then=Value(1)), default=Value(0))


def recorded_outcome(*, model: str, primitive: str, item_id: str | None, prompt_sha256: str) -> dict[str, Any] | None:
    """The recording of a (model, primitive) pair for an item (by its id) or a prompt (by its
    hash): the first source's, as `recorded_outcomes` orders them; its FIELDS, or None."""
    rows = RecordedOutcome.objects.filter(model=model, primitive=primitive)
    rows = rows.filter(item_id=item_id) if item_id is not None else rows.filter(prompt_sha256=prompt_sha256)
    return rows.order_by(COLLECTED_LAST, "source").annotate(prompt_chars=Length("prompt")).values(*FIELDS).first()


def recorded_outcomes(triples: Iterable[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """The recordings of (model, primitive, item id) triples in one query (one index range per
    (model, primitive), which `outcome_by_item` serves), the first source's last."""
    groups: dict[tuple[str, str], list[str]] = {}
    for model, primitive, item_id in triples:
        groups.setdefault((model, primitive), []).append(item_id)
    if not groups:
        return []
    match = Q()
    for (model, primitive), item_ids in groups.items():
        match |= Q(model=model, primitive=primitive, item_id__in=item_ids)
    rows = RecordedOutcome.objects.filter(match).order_by(COLLECTED_LAST.desc(), "-source")
    rows = rows.annotate(prompt_chars=Length("prompt"))
    return list(rows.values(*FIELDS))
