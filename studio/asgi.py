"""ASGI entry point: HTTP through Django (/v1/ through its lean handler, `studio.openai_asgi`),
WebSockets through Channels.

Once everything is loaded (the fast path's executor too: litellm and the primitives, which a
first /v1 request would otherwise wait seconds for), the objects made so far are moved out of
the garbage collector's sight (`gc.freeze`), as the workers do (workers/celery.py): a full
collection walked them all, about 0.3 s of a server that stood still meanwhile.
"""

import gc
import os

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.utils.module_loading import import_string

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings.production")

# Django must be set up before the consumers (and so the models) are imported.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from studio.openai_asgi import http_router  # noqa: E402
from studio.routing import websocket_urlpatterns  # noqa: E402
from studio.ws_auth import TokenAuthMiddleware  # noqa: E402

if settings.ORCHESTRA_FAST_PATH:
    import_string(settings.ORCHESTRA_ATTEMPT_EXECUTOR)

application = ProtocolTypeRouter(
    {
        "http": http_router(django_asgi_app),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns)))
        ),
    }
)

gc.freeze()
