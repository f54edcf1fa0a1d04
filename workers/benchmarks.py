"""The vendored benchmark items: moved to `orchestrator.benchmarks`, so that the studio (which
imports nothing of `workers/`) can make tasks of them too. Kept here for existing imports."""

from orchestrator.benchmarks import BFCL_CATEGORIES, DATA_DIR, load, names

__all__ = ["BFCL_CATEGORIES", "DATA_DIR", "load", "names"]
