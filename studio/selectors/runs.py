"""Tasks, runs and their events, as the asking user may see them."""

from __future__ import annotations

from django.db.models import QuerySet

from studio.errors import NotFound
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


def run_get(*, user: User, run_id: int) -> Run:
    run = Run.objects.select_related("task", "owner").filter(pk=run_id).first()
    if run is None or not can_read_run(user, run):
        raise NotFound(f"Run {run_id} does not exist.")
    return run


def run_events(*, user: User, run_id: int, after: int = 0, limit: int = 500) -> list[RunEvent]:
    """Events with seq > after, oldest first, at most `limit`."""
    run_get(user=user, run_id=run_id)
    return list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit])
