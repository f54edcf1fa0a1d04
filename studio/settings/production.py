"""Production: every secret and address comes from the environment; nothing defaults.

Meant to run behind a load balancer or reverse proxy that terminates TLS and sets
X-Forwarded-Proto (docs/deploy.md). `manage.py check --deploy` passes with no warning
under the environment documented there.
"""

from studio.settings.base import *  # noqa: F403
from studio.settings.env import env_bool, env_int, env_list, env_required

_HINT = "Production settings take no default for it."
SECRET_KEY = env_required("SECRET_KEY", _HINT)
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEY", [])
env_required("FIELD_ENCRYPTION_KEY", _HINT)
env_required("DATABASE_URL", _HINT)
env_required("REDIS_URL", _HINT)
env_required("ALLOWED_HOSTS", _HINT)

DEBUG = env_bool("DEBUG", False)
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Plain-HTTP requests are redirected to HTTPS (by the proxy's X-Forwarded-Proto), except the
# health check, which load balancers and `manage.py up` call on the web host's own address.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_REDIRECT_EXEMPT = [r"^api/health$"]
# HTTP Strict Transport Security: browsers use HTTPS only, for a year, on subdomains too.
# SECURE_HSTS_SECONDS=0 turns it off (check --deploy then warns); docs/deploy.md says when.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
