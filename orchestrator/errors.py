"""Errors the orchestrator raises for its callers to tell apart (no torch, no Django)."""


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be loaded: missing, unreadable, truncated, or not a policy's."""


class UsageError(ValueError):
    """Options a tool or library call cannot use: the message names the option and what is wrong.
    A command-line tool reports it as a usage error (exit status 2); the studio as a 4xx or a
    failed job, in the same words."""
