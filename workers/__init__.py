"""The Celery app and its tasks; primitives and the provider layer live here too."""

import os

# litellm fetches its model price map over the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from workers.celery import app as celery_app  # noqa: E402

__all__ = ["celery_app"]
