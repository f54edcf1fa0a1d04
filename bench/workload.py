"""The bench's workload: the replay pool of routerbench's recorded outcomes (endpoints
`replay/<model>` that answer from the recordings, `manage.py import_outcomes`), composite
tasks made of its recorded items, the admin user who owns them, and waiting for their runs
to end. These need Django set up (inside `bench_environment`); bench/harness.py re-exports
every name, so `from bench.harness import ...` finds them as before.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

OUTCOMES = Path(__file__).resolve().parents[1] / "data" / "outcomes"
TERMINAL = {"succeeded", "failed", "cancelled"}
REPLAY_POOL = "bench-replay"
REPLAY_SOURCE = "routerbench"


def wait_runs(run_ids: list[int], timeout_s: float, poll_s: float = 0.05) -> dict[int, str]:
    """Poll until every run has ended or the timeout passes; return each run's status."""
    from studio.models import Run

    deadline = time.monotonic() + timeout_s
    while True:
        statuses = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "status"))
        if all(status in TERMINAL for status in statuses.values()) or time.monotonic() > deadline:
            return statuses
        time.sleep(poll_s)


def bench_user(username: str = "bench") -> Any:
    from studio.models import Role, User

    user, _ = User.objects.get_or_create(username=username, defaults={"role": Role.ADMIN})
    return user


def replay_pool() -> int:
    """The replay pool of routerbench's recorded outcomes (`manage.py import_outcomes`; a no-op
    once loaded); return its id."""
    from django.core.management import call_command

    from studio.models import ModelPool

    path = OUTCOMES / f"{REPLAY_SOURCE}.jsonl.gz"
    with open(os.devnull, "w") as quiet:
        call_command("import_outcomes", str(path), "--pool", REPLAY_POOL, "--no-progress", stdout=quiet)
    return int(ModelPool.objects.get(name=REPLAY_POOL).pk)


def composite_tasks(*, runs: int, items: int, offset: int = 0) -> list[int]:
    """`runs` composite tasks (task_create_composite) of `items` distinct recorded items each."""
    from studio.models import RecordedOutcome
    from studio.services.tasks import task_create_composite

    ids = list(
        RecordedOutcome.objects.filter(source=REPLAY_SOURCE)
        .values_list("item_id", flat=True)
        .distinct()
        .order_by("item_id")[offset : offset + runs * items]
    )
    if len(ids) < runs * items:
        raise SystemExit(f"only {len(ids)} recorded items from {offset}; ask for fewer runs or items")
    owner = bench_user()
    return [
        task_create_composite(owner=owner, items=[(REPLAY_SOURCE, i) for i in ids[n * items : (n + 1) * items]]).pk
        for n in range(runs)
    ]


def forget_pool(name: str) -> None:
    """A pool an earlier run of a bench left (its upstream's port is gone): its collections and
    their recorded outcomes (the engine reads a text's recordings, which would tell a later run
    the domain of a held-out text), its runs with their tasks, then the pool."""
    from studio.models import Collection, ModelPool, RecordedOutcome, Task

    collections = Collection.objects.filter(pool__name=name)
    RecordedOutcome.objects.filter(source__in=list(collections.values_list("source", flat=True))).delete()
    Task.objects.filter(runs__pool__name=name).delete()
    collections.delete()
    ModelPool.objects.filter(name=name).delete()
