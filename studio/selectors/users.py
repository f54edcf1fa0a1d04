from __future__ import annotations

from django.db.models import QuerySet

from studio.models import ApiToken, User


def token_list(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")


def user_list(*, role: str = "") -> QuerySet[User]:
    """Every user (the inactive too: their runs stay), by username; of one role when given."""
    users = User.objects.only("id", "username", "role").order_by("username", "id")
    return users.filter(role=role) if role else users
