"""Tasks, runs and their events, as the asking user may see them."""

from __future__ import annotations

from django.db.models import QuerySet

from studio import fast_intents
from studio.db import connection_release
from studio.errors import NotFound, Unavailable
from studio.models import Run, RunEvent, Task, User
from studio.permissions import can_read_run, can_see_everything, can_view_task


def task_list(
    *, user: User, search: str = "", benchmark: str = "", domain: str = "", owner_id: int | None = None
) -> QuerySet[Task]:
    tasks = Task.objects.select_related("owner")
    if not can_see_everything(user):
        tasks = tasks.filter(owner=user)
    if search:
        tasks = tasks.filter(text__icontains=search)
    if benchmark:
        tasks = tasks.filter(benchmark=benchmark)
    if domain:
        tasks = tasks.filter(domain=domain)
    if owner_id is not None:
        tasks = tasks.filter(owner_id=owner_id)
    return tasks.order_by("-created_at", "-id")


def task_get(*, user: User, task_id: int) -> Task:
    """A task the user may see; someone else's task reads as missing, not forbidden."""
    task = Task.objects.select_related("owner").filter(pk=task_id).first()
    if task is None or not can_view_task(user, task):
        raise NotFound(f"Task {task_id} does not exist.")
    return task


def task_benchmarks(*, user: User) -> list[str]:
    """The benchmarks of the tasks `user` may see, each once, sorted (for filters)."""
    tasks = task_list(user=user).exclude(benchmark="").order_by("benchmark")
    return list(tasks.values_list("benchmark", flat=True).distinct())


def run_list(
    *,
    user: User,
    status: str = "",
    policy: str = "",
    benchmark: str = "",
    owner_id: int | None = None,
    task_id: int | None = None,
    search: str = "",
) -> QuerySet[Run]:
    runs = Run.objects.select_related("task", "owner")
    if not can_see_everything(user):
        runs = runs.filter(owner=user)
    if status:
        runs = runs.filter(status=status)
    if policy:
        runs = runs.filter(policy=policy)
    if benchmark:
        runs = runs.filter(task__benchmark=benchmark)
    if owner_id is not None:
        runs = runs.filter(owner_id=owner_id)
    if task_id is not None:
        runs = runs.filter(task_id=task_id)
    if search:
        runs = runs.filter(task__text__icontains=search)
    return runs.order_by("-created_at", "-id")


def run_recorded(run_id: int) -> None:
    """Return once a run that /v1's fast path answered is written (a worker writes it just after
    the answer: `studio.fast_intents`); a 503 if that takes over ORCHESTRA_FAST_READ_WAIT_S. The
    database connection goes back to the pool meanwhile."""
    connection_release()
    if not fast_intents.wait_recorded(run_id):
        raise Unavailable(f"Run {run_id} was answered and is being recorded; try again in a moment.")


def run_get(*, user: User, run_id: int) -> Run:
    run = Run.objects.select_related("task", "owner").filter(pk=run_id).first()
    if run is None:
        # Being written (waited for), or written between the read and the question: read again.
        if fast_intents.pending(run_id):
            run_recorded(run_id)
        run = Run.objects.select_related("task", "owner").filter(pk=run_id).first()
    if run is None or not can_read_run(user, run):
        raise NotFound(f"Run {run_id} does not exist.")
    return run


def run_events(*, user: User, run_id: int, after: int = 0, limit: int = 500) -> list[RunEvent]:
    """Events with seq > after, oldest first, at most `limit`."""
    run_get(user=user, run_id=run_id)
    return list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit])
