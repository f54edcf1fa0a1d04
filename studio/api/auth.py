"""API authentication: a session cookie for the browser, a bearer token for scripts.

Every route states the least role it needs with `auth=role(Role.X)`: no credentials
give 401, a role below the minimum gives 403.
"""

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import HttpBearer
from ninja.security.apikey import APIKeyCookie
from ninja.utils import check_csrf

from studio.models import Role, User
from studio.permissions import check_role
from studio.services.tokens import token_user

UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


class BearerToken(HttpBearer):
    def __init__(self, minimum: Role) -> None:
        self.minimum = minimum
        super().__init__()

    def __call__(self, request: HttpRequest) -> Any:
        # Unlike ninja's HttpBearer, never log the header: it holds a secret.
        scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not raw:
            return None
        return self.authenticate(request, raw.strip())

    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        user = token_user(raw=token)
        if user is None:
            return None
        request.user = user
        check_role(user, self.minimum)
        return user


class SessionCookie(APIKeyCookie):
    param_name = settings.SESSION_COOKIE_NAME

    def __init__(self, minimum: Role) -> None:
        self.minimum = minimum
        super().__init__(csrf=True)

    def __call__(self, request: HttpRequest) -> Any:
        user = request.user
        if not user.is_authenticated:
            return None
        if request.method in UNSAFE_METHODS and check_csrf(request) is not None:
            raise HttpError(
                403,
                "CSRF check failed: send the csrftoken cookie's value in the X-CSRFToken header.",
            )
        return self.authenticate(request, None)

    def authenticate(self, request: HttpRequest, key: str | None) -> User | None:
        user = request.user
        assert isinstance(user, User)
        check_role(user, self.minimum)
        return user


def role(minimum: Role) -> list[Any]:
    """Auth for a route that needs at least `minimum`: a token first, else the session."""
    return [BearerToken(minimum), SessionCookie(minimum)]


def current_user(request: HttpRequest) -> User:
    user = request.auth  # type: ignore[attr-defined]
    assert isinstance(user, User)
    return user
