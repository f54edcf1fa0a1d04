"""OpenAI's error shape for /v1/: the exception that its view, service and selector raise,
the errors about a run, and the JSON response each error becomes (the run's id, once the run
exists, also as the x-orchestra-run-id header)."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse

from studio.errors import ApplicationError
from studio.models import Run
from studio.unavailable import MESSAGE, RETRY_AFTER_S, log_unavailable

RUN_HEADER = "x-orchestra-run-id"


class OpenAIError(ApplicationError):
    """An error in OpenAI's shape; `run_id` is also sent as the x-orchestra-run-id header."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        run_id: int | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message, extra)
        self.status, self.type, self.param, self.code, self.run_id = status, type, param, code, run_id


def error_body(exc: ApplicationError) -> dict[str, Any]:
    if isinstance(exc, OpenAIError):
        error: dict[str, Any] = {"message": exc.message, "type": exc.type, "param": exc.param, "code": exc.code}
        if exc.run_id is not None:
            error["run_id"] = exc.run_id
        return {"error": {**error, **exc.extra}}
    # A service's error: its field is the parameter at fault.
    kind = "permission_error" if exc.status == 403 else "invalid_request_error"
    return {"error": {"message": exc.message, "type": kind, "param": exc.extra.get("field"), "code": None}}


def error_response(exc: ApplicationError) -> JsonResponse:
    response = JsonResponse(error_body(exc), status=exc.status)
    if exc.status == 503:
        response["Retry-After"] = str(RETRY_AFTER_S)
    if isinstance(exc, OpenAIError) and exc.run_id is not None:
        response[RUN_HEADER] = str(exc.run_id)
        # OpenAI's clients retry a 5xx unless told not to; a retry would start another run.
        response["x-should-retry"] = "false"
    return response


def run_ended_badly(run: Run) -> OpenAIError:
    reason = run.end_reason or "no reason was recorded"
    return OpenAIError(
        502, f"Run {run.pk} {run.status}: {reason}", type="orchestra_run_failed", code=f"run_{run.status}",
        run_id=run.pk, run_status=run.status, end_reason=run.end_reason,
    )  # fmt: skip


def database_unavailable(exc: BaseException, run_id: int | None = None) -> OpenAIError:
    log_unavailable("/v1", exc)
    return OpenAIError(503, MESSAGE, type="service_unavailable", code="database_unavailable", run_id=run_id)


def run_timed_out(run_id: int, limit_s: float) -> OpenAIError:
    return OpenAIError(
        504,
        f"Run {run_id} has not ended after {limit_s:g} s. It goes on: follow it at /api/runs/{run_id}.",
        type="orchestra_run_timeout", code="run_timeout", run_id=run_id,
    )  # fmt: skip
