"""A developer machine, and the embedded default of `manage.py up`.

Secrets that are not in the environment are generated once under DATA_DIR. When
DATABASE_URL, REDIS_URL or ORCHESTRA_LOCAL_MODEL_URL is unset, the embedded services and the
local model that `up` started are used.
"""

from studio.settings import local_secrets
from studio.settings.base import *  # noqa: F403
from studio.settings.base import DATABASE_URL, ORCHESTRA_LOCAL_MODEL_URL, REDIS_URL, apply_redis, database_settings
from studio.settings.env import DATA_DIR, env_bool, env_list, env_str, read_services_file

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY") or local_secrets.secret_key(DATA_DIR)
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEY", []) or [local_secrets.field_encryption_key(DATA_DIR)]

_embedded = read_services_file()
if DATABASE_URL is None and "DATABASE_URL" in _embedded:
    DATABASES = database_settings(_embedded["DATABASE_URL"])
if REDIS_URL is None and "REDIS_URL" in _embedded:
    apply_redis(globals(), _embedded["REDIS_URL"])
if not ORCHESTRA_LOCAL_MODEL_URL and "ORCHESTRA_LOCAL_MODEL_URL" in _embedded:
    ORCHESTRA_LOCAL_MODEL_URL = _embedded["ORCHESTRA_LOCAL_MODEL_URL"]  # the one `up` serves

# Serve static files straight from the apps, without collectstatic.
SERVESTATIC_USE_FINDERS = True
STATIC_ROOT = None
