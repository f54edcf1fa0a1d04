"""Who may do what. Roles form a ladder: viewer < labeler < researcher < admin.

- viewer: submits tasks, reads and watches its own tasks and runs, manages its API tokens;
- labeler: also labels preference pairs;
- researcher: also reads every task and run, trains and evaluates;
- admin: also manages model pools, endpoints, primitives and admissibility.
"""

from __future__ import annotations

from studio.errors import Forbidden
from studio.models import Role, Run, Task, User


def check_role(user: User, minimum: Role) -> None:
    if not user.has_role(minimum):
        yours = Role(user.role).label.lower()
        raise Forbidden(f"This needs the {minimum.label.lower()} role or above; you are a {yours}.")


def can_see_everything(user: User) -> bool:
    return user.has_role(Role.RESEARCHER)


def can_view_task(user: User, task: Task) -> bool:
    return task.owner_id == user.pk or can_see_everything(user)


def can_view_run(user: User, run: Run) -> bool:
    """The run's owner, a researcher or an admin (also who may watch it live)."""
    return run.owner_id == user.pk or can_see_everything(user)
