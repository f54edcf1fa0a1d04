"""The one domain exception family. Services raise these; the API maps them to HTTP."""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A request the studio cannot carry out, with a sentence a person understands."""

    status = 400

    def __init__(self, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class NotFound(ApplicationError):
    status = 404


class Forbidden(ApplicationError):
    status = 403


class Conflict(ApplicationError):
    status = 409


class ServerError(ApplicationError):
    """The server cannot do it through no fault of the request (logged where it is raised)."""

    status = 500


class Unavailable(ApplicationError):
    """Not there yet, through no fault of the request: try again in a moment (503, Retry-After)."""

    status = 503


class Invalid(ApplicationError):
    """Input that parses but breaks a rule; `extra["field"]` names the field."""

    status = 422

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, {"field": field})
