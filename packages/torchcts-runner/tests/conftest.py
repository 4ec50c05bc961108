"""Shared fixtures for the runner's plugin tests (pytester runs of fake cases)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    """pytester is a pytest plugin; load it even without a root conftest."""
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")
