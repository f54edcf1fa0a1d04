"""What the sandbox can do on this machine, for the sandbox tests (test_sandbox_*.py): its
isolation, and marks that skip a test this machine cannot hold the sandbox to."""

from __future__ import annotations

import os

import pytest

from providers.sandbox import isolation

ISOLATION = isolation()
namespaces = pytest.mark.skipif(
    ISOLATION.mode == "plain", reason=f"this machine allows no namespaces for the sandbox ({ISOLATION})"
)
# RLIMIT_NPROC binds every uid but root; as root without namespaces the program stays root.
counts_processes = pytest.mark.skipif(
    os.geteuid() == 0 and ISOLATION.user == "self", reason="the program runs as root here"
)
