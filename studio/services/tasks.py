from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

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
