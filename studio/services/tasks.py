from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from orchestrator.checking import checker_names, has_checker
from orchestrator.composite import composite_text
from studio.errors import Invalid
from studio.models import Domain, Task, User


def check_task_text(text: str) -> None:
    limit = settings.ORCHESTRA_MAX_TASK_CHARS
    if not text.strip():
        raise Invalid("text", "The task text is empty.")
    if len(text) > limit:
        raise Invalid("text", f"The task text has {len(text):,} characters; the limit is {limit:,}.")


@transaction.atomic
def task_create(
    *,
    owner: User,
    text: str,
    gold_answer: str = "",
    checker: str = "",
    benchmark: str = "",
    domain: str = "",
    decomposable: bool = False,
    metadata: dict[str, Any] | None = None,
) -> Task:
    check_task_text(text)
    if domain and domain not in Domain.values:
        raise Invalid("domain", f"Unknown domain {domain!r}; use one of {', '.join(Domain.values)}.")
    if checker and not has_checker(checker):
        raise Invalid("checker", f"Unknown checker {checker!r}; use one of {', '.join(checker_names())}.")
    return Task.objects.create(
        owner=owner,
        text=text,
        gold_answer=gold_answer,
        checker=checker,
        benchmark=benchmark,
        domain=domain,
        decomposable=decomposable,
        metadata=metadata or {},
    )


@transaction.atomic
def task_create_composite(*, owner: User, items: list[tuple[str, str]], text: str = "") -> Task:
    """A task made of several recorded items (source, item_id). The default policy splits it
    into one subtask per item, which replay answers from the records; the run's score is the
    mean of the items' recorded scores, and it is correct when every item is."""
    from studio.models import RecordedOutcome

    if not 1 <= len(items) <= 32:
        raise Invalid("items", f"A composite task has 1 to 32 items, not {len(items)}.")
    parts: list[dict[str, Any]] = []
    for source, item_id in items:
        rows = list(
            RecordedOutcome.objects.filter(source=source, item_id=item_id)
            .values("prompt", "benchmark", "domain", "gold", "model", "primitive")
            .order_by("model", "primitive")
        )
        if not rows:
            raise Invalid("items", f"There is no recorded item {item_id!r} in source {source!r}.")
        first = rows[0]
        parts.append(
            {
                "source": source,
                "item_id": item_id,
                "prompt": first["prompt"],
                "benchmark": first["benchmark"],
                "domain": first["domain"],
                "gold": first["gold"],
                "recorded_pairs": sorted({(r["model"], r["primitive"]) for r in rows}),
            }
        )
    domains = {part["domain"] for part in parts}
    body = text or composite_text([p["prompt"] for p in parts])
    check_task_text(body[: settings.ORCHESTRA_MAX_TASK_CHARS])
    return Task.objects.create(
        owner=owner,
        text=body[: settings.ORCHESTRA_MAX_TASK_CHARS],
        benchmark="composite",
        domain=domains.pop() if len(domains) == 1 else "",
        decomposable=True,
        metadata={"items": [{**p, "recorded_pairs": [list(pair) for pair in p["recorded_pairs"]]} for p in parts]},
    )
