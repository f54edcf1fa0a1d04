"""Production: every secret and address comes from the environment; nothing defaults."""

from studio.settings.base import *  # noqa: F403
from studio.settings.env import env_bool, env_list, env_required

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
