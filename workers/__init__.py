"""The Celery app and its tasks; primitives, the sandbox and the provider layer live here too.

The Celery app is in `workers.celery` (`celery -A workers worker` finds it); it is not
imported here, so that plain scripts such as `python -m workers.importers` load no Django.
"""

import os

# litellm fetches its model price map over the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
