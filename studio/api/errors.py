"""Every API error is JSON `{"detail": "<a sentence>", ...}` with a 4xx status."""

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import DataError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from studio.errors import ApplicationError
from studio.storable import UnstorableText
from studio.unavailable import database_unavailable


def _field(loc: list[Any] | tuple[Any, ...]) -> str:
    # ninja prefixes the parameter source ("body", "query", "path") and the argument name.
    parts = [str(part) for part in loc]
    if len(parts) >= 2 and parts[0] == "body":
        parts = parts[2:] or parts[1:]
    elif parts and parts[0] in {"query", "path", "header", "cookie"}:
        parts = parts[1:]
    return ".".join(parts) or "body"


def validation_errors(errors: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Field and message of each error, without echoing the input (it may hold a key)."""
    return [{"field": _field(error.get("loc", ())), "message": str(error.get("msg", "is invalid"))} for error in errors]


def data_error_detail(exc: DataError) -> str:
    """A sentence for PostgreSQL's refusal of a value, without echoing the SQL or the value."""
    state = getattr(exc.__cause__, "sqlstate", None)
    if state == "22003":
        return "A number in the request is out of range."
    if state == "22001":
        return "A text in the request is longer than its field allows."
    if state == "22P05" or "NUL" in str(exc):
        return "The request holds a NUL character (\\u0000) in a string; it cannot be stored."
    return "A value in the request cannot be stored."


def install(api: NinjaAPI) -> None:
    @api.exception_handler(ApplicationError)
    def application_error(request: HttpRequest, exc: ApplicationError) -> HttpResponse:
        response = api.create_response(request, {"detail": exc.message, **exc.extra}, status=exc.status)
        if exc.status == 503:
            response["Retry-After"] = "1"
        return response

    @api.exception_handler(ValidationError)
    def invalid_input(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        errors = validation_errors(exc.errors)
        summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
        body = {"detail": f"Invalid input. {summary}", "errors": errors}
        if errors:
            body["field"] = errors[0]["field"]  # as a service's Invalid names it
        return api.create_response(request, body, status=422)

    @api.exception_handler(AuthenticationError)
    def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        detail = "Authentication required: log in, or send an API token as 'Authorization: Bearer <token>'."
        return api.create_response(request, {"detail": detail}, status=401)

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        detail = exc.message
        if isinstance(exc.__cause__, UnstorableText):
            detail = str(exc.__cause__)
        elif isinstance(exc.__cause__, RecursionError):
            detail = "The request body is nested too deeply."
        elif detail.startswith("Cannot parse request body"):
            # ninja's words for a body that is not JSON or not UTF-8.
            detail = "The request body is not valid JSON" + detail.removeprefix("Cannot parse request body")
        return api.create_response(request, {"detail": detail}, status=exc.status_code)

    @api.exception_handler(DataError)
    def unstorable(request: HttpRequest, exc: DataError) -> HttpResponse:
        # A value that passed validation but not PostgreSQL (e.g. a paging offset past bigint,
        # NUL in a query parameter). The service's transaction has rolled back; nothing is written.
        return api.create_response(request, {"detail": data_error_detail(exc)}, status=422)

    @api.exception_handler(OperationalError)
    @api.exception_handler(InterfaceError)
    def database_down(request: HttpRequest, exc: Exception) -> HttpResponse:
        # Not 500: the database refused or dropped the connection, or the pool had none free.
        return database_unavailable(request, exc)

    @api.exception_handler(Http404)
    def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return api.create_response(request, {"detail": str(exc) or "Not found."}, status=404)

    @api.exception_handler(RequestDataTooBig)
    def too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
        return api.create_response(request, {"detail": "The request body is too large."}, status=413)
