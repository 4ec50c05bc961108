"""Synthetic artifacts for the report tests, built from schema objects (never torch)."""

from __future__ import annotations

import pytest
from report_factories import Synthetic


@pytest.fixture
def syn() -> type[Synthetic]:
    """The synthetic artifact builders."""
    return Synthetic
