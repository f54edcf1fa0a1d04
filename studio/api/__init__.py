"""The one NinjaAPI at /api/ (OpenAPI docs at /api/docs)."""

from ninja import NinjaAPI

from studio.api import (
    catalog,
    collections,
    errors,
    evaluations,
    health,
    pools,
    preferences,
    runs,
    session,
    tasks,
    tokens,
    training,
    users,
)
from studio.api.parser import StorableJsonParser

api = NinjaAPI(
    title="Orchestra Studio API",
    version="1",
    description="Learned orchestration of LLM agents. Authenticate with a session (browser) "
    "or an API token sent as the header `Authorization: Bearer TOKEN` (create one with "
    "POST /api/tokens). Roles, errors and paging: docs/api.md.",
    urls_namespace="api",
    parser=StorableJsonParser(),
)
errors.install(api)
api.add_router("", health.router)
api.add_router("/auth", session.router)
api.add_router("/tokens", tokens.router)
api.add_router("", pools.router)
api.add_router("/tasks", tasks.router)
api.add_router("/runs", runs.router)
api.add_router("", training.router)
api.add_router("", evaluations.router)
api.add_router("", collections.router)
api.add_router("/preferences", preferences.router)
api.add_router("", catalog.router)
api.add_router("/users", users.router)
