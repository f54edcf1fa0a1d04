"""Orchestra Studio: the Django project and web app."""

import os

# litellm fetches its model price map over the network at import unless told otherwise.
# Every entry point (manage.py, ASGI, Celery) imports this package before litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
