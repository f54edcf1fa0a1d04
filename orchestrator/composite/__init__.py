"""Composite tasks from recorded items, and what decomposing or delegating them scores and costs."""

from orchestrator.composite.build import Composite, CompositeConfig, build_composites, build_split, composite_text
from orchestrator.composite.outcome import CompositeCosting, Decompose, Delegate, Outcome, Plan, Solve

__all__ = [
    "Composite",
    "CompositeConfig",
    "CompositeCosting",
    "Decompose",
    "Delegate",
    "Outcome",
    "Plan",
    "Solve",
    "build_composites",
    "build_split",
    "composite_text",
]
