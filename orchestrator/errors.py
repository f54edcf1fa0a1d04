"""Errors the orchestrator raises for its callers to tell apart (no torch, no Django)."""


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be loaded: missing, unreadable, truncated, or not a policy's."""
