"""A database that refuses or drops connections, or whose pool has none free in time, gets
a 503 with a sentence and Retry-After, never a 500: the API's handler, the /v1 views and,
for every other view (the admin), `DatabaseUnavailableMiddleware` use it."""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin

log = logging.getLogger(__name__)

DATABASE_ERRORS = (OperationalError, InterfaceError)
RETRY_AFTER_S = 5
MESSAGE = (
    "The studio cannot reach its database right now (it refused the connection, dropped it, or is too busy). "
    "Try again in a moment."
)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def log_unavailable(where: str, exc: BaseException) -> None:
    """The reason goes to the log, not to the client."""
    log.warning("503 for %s: the database is unavailable (%s)", where, first_line(exc))


def database_unavailable(request: HttpRequest, exc: BaseException, *, json: bool = True) -> HttpResponse:
    """The 503 for `exc`."""
    log_unavailable(f"{request.method} {request.path}", exc)
    response = JsonResponse({"detail": MESSAGE}, status=503) if json else HttpResponse(MESSAGE, status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


class DatabaseUnavailableMiddleware(MiddlewareMixin):
    """Views outside the API and /v1 (which answer in their own shapes first)."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DATABASE_ERRORS):
            return None
        return database_unavailable(request, exception, json=request.path.startswith(("/api/", "/v1/")))
