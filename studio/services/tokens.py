"""API tokens for scripts: shown once at creation, stored only as a SHA-256 digest."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from studio.errors import NotFound
from studio.models import ApiToken, User
from studio.selectors.setup_cache import cached

TOKEN_PREFIX = "orc_"  # noqa: S105 - a public marker, not a secret


def token_digest(raw: str) -> str:
    # The token carries 256 random bits, so a fast hash is enough (as for GitHub's tokens).
    return hashlib.sha256(raw.encode()).hexdigest()


@transaction.atomic
def token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """Return the new token row and its plaintext, which is never stored or shown again."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=raw[:12], digest=token_digest(raw))
    return token, raw


@transaction.atomic
def token_revoke(*, user: User, token_id: int) -> ApiToken:
    token = ApiToken.objects.select_for_update().filter(pk=token_id, user=user).first()
    if token is None:
        raise NotFound(f"You have no API token with id {token_id}.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


@dataclass
class _Known:
    token_id: int
    user: User
    last_used_at: datetime | None


def _known(digest: str) -> _Known | None:
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=digest, revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    return _Known(token.pk, token.user, token.last_used_at) if token is not None else None


def token_user(*, raw: str) -> User | None:
    """The active user a bearer token belongs to, or None for an unknown or revoked token.
    Known tokens are cached until a token or a user changes (`setup_cache`: a revoke, a
    deactivation); an unknown one is looked up every time."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    digest = token_digest(raw)
    known = cached(("token", digest), lambda: _known(digest), keep=lambda found: found is not None)
    if known is None:
        return None
    now = timezone.now()
    # Record use at most once a minute, to keep a write off every request (an UPDATE: it
    # changes no cached entry, and no other process needs to know).
    if known.last_used_at is None or (now - known.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=known.token_id).update(last_used_at=now)
        known.last_used_at = now
    return known.user
