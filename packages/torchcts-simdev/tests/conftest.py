"""Shared fixtures: every test starts and ends with the clean profile."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torchcts_simdev


@pytest.fixture(autouse=True)
def clean_profile(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run each test under the clean profile, with the env override unset, on a
    working device (a ``poison`` fault lasts for the process: tests reset it)."""
    monkeypatch.delenv(torchcts_simdev.ENV_VAR, raising=False)
    torchcts_simdev.configure("clean")
    yield
    torchcts_simdev.configure("clean")
    torch._torchcts_simdev_fallback.poisoned = None  # type: ignore[attr-defined]


@pytest.fixture
def inject() -> Callable[..., torchcts_simdev.FaultProfile]:
    """Activate a one-rule profile built from keyword arguments."""

    def activate(**rule: Any) -> torchcts_simdev.FaultProfile:
        return torchcts_simdev.configure({"name": "test", "rules": [rule]})

    return activate
