"""Hand-made fixtures in the upstream shapes, laid out like the shared data folder."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def shared() -> Path:
    return FIXTURES
