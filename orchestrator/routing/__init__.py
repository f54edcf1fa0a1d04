"""Offline routing on recorded outcomes: the outcome table, the method protocol, the metrics.

Every router (the baselines and the learned policy) is evaluated the same way: it is fit
on a train `OutcomeTable`, routes every item of a test table to one or more
(model, primitive) columns, and is scored on the recorded outcomes of the columns it chose.
"""

from orchestrator.routing.methods import Method, NotApplicable, Routes, executed_response
from orchestrator.routing.table import OutcomeTable, load_table, probe_split, split_table

__all__ = [
    "Method",
    "NotApplicable",
    "OutcomeTable",
    "Routes",
    "executed_response",
    "load_table",
    "probe_split",
    "split_table",
]
