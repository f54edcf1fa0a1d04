from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.db import models


class Role(models.TextChoices):
    """Roles form a ladder: each one may do everything the roles below it may."""

    VIEWER = "viewer", "Viewer"
    LABELER = "labeler", "Labeler"
    RESEARCHER = "researcher", "Researcher"
    ADMIN = "admin", "Admin"


ROLE_RANK = {Role.VIEWER: 0, Role.LABELER: 1, Role.RESEARCHER: 2, Role.ADMIN: 3}


class User(AbstractUser):
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)

    def has_role(self, minimum: Role) -> bool:
        """True when this user's role is `minimum` or above it (superusers are admins)."""
        if self.is_superuser:
            return True
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[minimum]


class ApiToken(models.Model):
    """A bearer token for scripts. Only its SHA-256 digest is stored."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The token's first characters, to tell tokens apart.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"
        indexes = [models.Index(fields=["user", "-created_at"], name="apitoken_user_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
