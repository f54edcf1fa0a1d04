from django.http import HttpRequest
from ninja import Router, Schema, Status

from studio.health import health

router = Router(tags=["health"])


class ComponentOut(Schema):
    ok: bool
    error: str | None = None
    workers: list[str] | None = None


class HealthOut(Schema):
    status: str
    db: ComponentOut
    redis: ComponentOut
    worker: ComponentOut


@router.get("/health", auth=None, response={200: HealthOut, 503: HealthOut}, exclude_none=True)
def get_health(request: HttpRequest) -> Status:
    """Reachability of PostgreSQL, Redis and at least one Celery worker (503 if any is down)."""
    report = health()
    return Status(200 if report["status"] == "ok" else 503, report)
