from __future__ import annotations

from django.db import transaction

from studio.models import Role, User


@transaction.atomic
def user_create(*, username: str, password: str | None, role: Role = Role.VIEWER, email: str = "") -> User:
    """Create a user; admins may also use the Django admin (is_staff, is_superuser)."""
    is_admin = role == Role.ADMIN
    user = User(username=username, email=email, role=role, is_staff=is_admin, is_superuser=is_admin)
    User._meta.get_field("username").clean(username, user)  # ValidationError: empty, too long, bad characters
    if password is None:
        user.set_unusable_password()
    else:
        user.set_password(password)
    user.save()
    return user
