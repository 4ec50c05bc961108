"""What the last run in this process produced, for `torchcts-run` to print at the end."""

from __future__ import annotations

from typing import Any

LAST_RUN: dict[str, Any] = {}

__all__ = ["LAST_RUN"]
