from django.http import HttpRequest
from ninja import Router, Schema, Status

from studio.health import health

router = Router(tags=["health"])


class ComponentOut(Schema):
    ok: bool
    error: str | None = None
    workers: list[str] | None = None
    url: str | None = None  # the local model's server
    model: str | None = None  # the name it serves


class HealthOut(Schema):
    status: str
    db: ComponentOut
    redis: ComponentOut
    worker: ComponentOut
    model: ComponentOut | None = None  # the local model, where this studio has one


@router.get("/health", auth=None, response={200: HealthOut, 503: HealthOut}, exclude_none=True)
def get_health(request: HttpRequest) -> Status:
    """Reachability of PostgreSQL, Redis, at least one Celery worker and the local model's server,
    where the studio has one (503 if any is down)."""
    report = health()
    return Status(200 if report["status"] == "ok" else 503, report)
