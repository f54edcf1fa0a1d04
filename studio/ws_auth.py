"""WebSocket authentication by bearer token, for clients that are not browsers.

Browsers are authenticated by their session cookie (AuthMiddlewareStack); this
middleware only fills `scope["user"]` when an `Authorization: Bearer` header is sent.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware

from studio.services.tokens import token_user


class TokenAuthMiddleware(BaseMiddleware):
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        headers = dict(scope.get("headers", []))
        scheme, _, raw = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scheme.lower() == "bearer" and raw.strip():
            user = await database_sync_to_async(token_user)(raw=raw.strip())
            if user is not None:
                scope = {**scope, "user": user}
        return await super().__call__(scope, receive, send)
