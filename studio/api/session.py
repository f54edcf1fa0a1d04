"""Browser sessions: login, logout, who am I, and the CSRF cookie."""

from django.contrib.auth import authenticate, login, logout
from django.http import HttpRequest, JsonResponse
from django.middleware.csrf import get_token
from ninja import Field, Router, Schema, Status
from ninja.errors import HttpError
from ninja.utils import check_csrf

from studio.api.auth import current_user, role
from studio.api.body import Body
from studio.models import Role, User
from studio.services.throttle import client_ip, login_lockout

router = Router(tags=["auth"])


class LoginIn(Body):
    username: str = Field(min_length=1, max_length=150)
    password: str = Field(min_length=1, max_length=1000)


class MeOut(Schema):
    id: int
    username: str
    email: str
    role: str
    is_staff: bool


class CsrfOut(Schema):
    csrf_token: str


@router.get("/csrf", auth=None, response=CsrfOut)
def csrf(request: HttpRequest) -> dict[str, str]:
    """Set the csrftoken cookie; send its value as X-CSRFToken on session writes."""
    return {"csrf_token": get_token(request)}


@router.post("/login", auth=None, response=MeOut)
def session_login(request: HttpRequest, payload: LoginIn) -> User | JsonResponse:
    # Too many failed logins for the username or from the address: 429 with Retry-After
    # (studio/services/throttle.py). Sent as is, so the OpenAPI schema stays as it was.
    if check_csrf(request) is not None:
        raise HttpError(403, "CSRF check failed: GET /api/auth/csrf first and send X-CSRFToken.")
    wait_s = login_lockout(username=payload.username, ip=client_ip(request))
    if wait_s is not None:
        detail = f"Too many failed logins. Try again in {wait_s} seconds."
        return JsonResponse({"detail": detail}, status=429, headers={"Retry-After": str(wait_s)})
    user = authenticate(request, username=payload.username, password=payload.password)  # counts failures
    if user is None:
        raise HttpError(401, "Wrong username or password.")
    login(request, user)
    assert isinstance(user, User)
    return user


@router.post("/logout", auth=role(Role.VIEWER), response={204: None})
def session_logout(request: HttpRequest) -> Status:
    logout(request)
    return Status(204, None)


@router.get("/me", auth=role(Role.VIEWER), response=MeOut)
def me(request: HttpRequest) -> User:
    return current_user(request)
