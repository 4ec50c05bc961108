"""Fixtures for the isolation tests: the environment that finds the test entries."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def entry_env() -> dict[str, str]:
    """Environment overrides that let a child import ``isolate_entries``."""
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(HERE), path) if p)}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture
def gone() -> Callable[[int], bool]:
    """``gone(pid)``: True once the process has exited (waits up to 5 s)."""

    def check(pid: int) -> bool:
        deadline = time.monotonic() + 5
        while _alive(pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    return check
