"""The decision-making of Orchestra Studio, in plain Python and torch.

This package never imports Django, so it can be tested and benchmarked on its own.
"""

import os

# litellm fetches its model price map over the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
