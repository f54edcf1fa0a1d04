"""Login throttling: failed logins are counted per username and per client address.

Every password check goes through ThrottledModelBackend (AUTHENTICATION_BACKENDS), so the
API's login and the Django admin's share the counts; POST /api/auth/login also asks
`login_lockout` first, to answer 429 with Retry-After.

Once a username has ORCHESTRA_LOGIN_MAX_FAILURES failures, or an address
ORCHESTRA_LOGIN_MAX_FAILURES_PER_IP, within ORCHESTRA_LOGIN_WINDOW_S seconds of its first
failure, further logins for it are refused until that window ends, without checking the
password. The counts live in the Django cache (Redis), so every web process sees the same
ones. A successful login clears its username's count; an address's count only expires, so
that one account an attacker holds cannot reset the count of its guesses at others.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

PREFIX = "login-failures"


def _user_key(username: str) -> str:
    # Hashed: a username is arbitrary input, and cache keys have a limited alphabet.
    return f"{PREFIX}:user:{hashlib.sha256(username.strip().lower().encode()).hexdigest()}"


def _ip_key(ip: str) -> str:
    return f"{PREFIX}:ip:{hashlib.sha256(ip.encode()).hexdigest()}"


def _counters(*, username: str, ip: str) -> list[tuple[str, int]]:
    """(cache key, the failures it allows) for each count a login attempt is held to."""
    return [
        (_user_key(username), settings.ORCHESTRA_LOGIN_MAX_FAILURES),
        (_ip_key(ip), settings.ORCHESTRA_LOGIN_MAX_FAILURES_PER_IP),
    ]


def login_lockout(*, username: str, ip: str) -> int | None:
    """Whole seconds until a login for `username` from `ip` may be tried again, or None
    when it may be tried now."""
    window = settings.ORCHESTRA_LOGIN_WINDOW_S
    counters = _counters(username=username, ip=ip)
    stored = cache.get_many([name for key, _ in counters for name in (key, f"{key}:start")])
    now = time.time()
    waits = [
        float(stored.get(f"{key}:start", now)) + window - now
        for key, limit in counters
        if int(stored.get(key, 0)) >= limit
    ]
    if not waits:
        return None
    return max(1, math.ceil(max(waits)))


def login_failure_record(*, username: str, ip: str) -> None:
    """Count one failed login against the username and the address."""
    window = settings.ORCHESTRA_LOGIN_WINDOW_S
    for key, _ in _counters(username=username, ip=ip):
        # The window starts at the first failure; both keys expire with it.
        cache.add(f"{key}:start", time.time(), timeout=window)
        cache.add(key, 0, timeout=window)
        try:
            cache.incr(key)  # atomic in Redis, and keeps the key's expiry
        except ValueError:  # expired between add and incr: a new window
            cache.set(key, 1, timeout=window)


def login_failures_clear(*, username: str) -> None:
    """Forget a username's failures (after it logged in)."""
    key = _user_key(username)
    cache.delete_many([key, f"{key}:start"])


def client_ip(request: HttpRequest | None) -> str:
    """The address a login came from (REMOTE_ADDR; a proxy in front must set it)."""
    return (request.META.get("REMOTE_ADDR") or "") if request is not None else ""


class ThrottledModelBackend(ModelBackend):
    """Django's password check, refused while the username or the address is locked out,
    and counted: a failure adds to both counts, a success clears the username's."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if username is None or password is None:
            return None
        ip = client_ip(request)
        if login_lockout(username=username, ip=ip) is not None:
            raise PermissionDenied  # Django stops here: no backend checks the password
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            login_failure_record(username=username, ip=ip)
        else:
            login_failures_clear(username=username)
        return user
