from __future__ import annotations

from django.db.models import QuerySet

from studio.models import ApiToken, User


def token_list(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")
