"""The primitives: how a model is called. Each returns the result envelope.

Importing this package registers all of them in `REGISTRY`.
"""

from providers.primitives import (  # noqa: F401 - each module registers itself
    aggregate,
    cot,
    direct,
    long_context,
    plan,
    program,
    reflexion,
    self_consistency,
    tool_use,
    verify,
)
from providers.primitives.base import REGISTRY, PrimitiveInput, run_attempt, run_primitive

__all__ = ["REGISTRY", "PrimitiveInput", "run_attempt", "run_primitive"]
