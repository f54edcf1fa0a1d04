"""Who may do what. Roles form a ladder: viewer < labeler < researcher < admin.

- viewer: submits tasks, reads and watches its own tasks and runs, manages its API tokens;
- labeler: also labels preference pairs;
- researcher: also reads every task and run, trains and evaluates;
- admin: also manages model pools, endpoints, primitives and admissibility.
"""

from __future__ import annotations

from django.db.models import Q

from studio.errors import Forbidden
from studio.models import PreferencePair, Role, Run, Task, User


def check_role(user: User, minimum: Role) -> None:
    if not user.has_role(minimum):
        yours = Role(user.role).label.lower()
        raise Forbidden(f"This needs the {minimum.label.lower()} role or above; you are a {yours}.")


def can_see_everything(user: User) -> bool:
    return user.has_role(Role.RESEARCHER)


def can_view_task(user: User, task: Task) -> bool:
    return task.owner_id == user.pk or can_see_everything(user)


def can_view_run(user: User, run: Run) -> bool:
    """The run's owner, a researcher or an admin: who may read, watch, cancel and re-run it."""
    return run.owner_id == user.pk or can_see_everything(user)


def can_read_run(user: User, run: Run) -> bool:
    """Who may read and watch a run: as can_view_run, and a labeler the runs of preference
    pairs, which it judges (read only: it may not cancel or re-run them)."""
    if can_view_run(user, run):
        return True
    in_pair = PreferencePair.objects.filter(Q(run_a=run) | Q(run_b=run)).exists()
    return user.has_role(Role.LABELER) and in_pair
