"""Where a case executes: in this process or isolated (first, trivial version).

Owned by the isolation engineer once the runner core exists. The runner core calls
``IsolationPolicy.from_options(options).mode_for(spec)`` and, for any mode but
"none", ``.run(spec, payload)``. This version always answers "none": every case runs
in process, and records say ``isolation="none"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchcts_schema import CaseRecord

ISOLATE_MODES = ("none", "ledger", "adaptive", "all")


class IsolationPolicy:
    """Decides per case whether to isolate it; this version never does."""

    def __init__(self, requested: str) -> None:
        self.requested = requested

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> IsolationPolicy:
        """Build from the runner's options (``isolate`` is the CLI choice)."""
        return cls(str(options.get("isolate") or "none"))

    def mode_for(self, spec: Any) -> str:
        """ "none": run in process (the only mode this version implements)."""
        return "none"

    def run(self, spec: Any, payload: dict[str, Any]) -> CaseRecord:
        """Run `spec` isolated; unreachable while `mode_for` always says "none"."""
        raise NotImplementedError("isolated execution is not available yet")

    def close(self) -> None:
        """Release child processes (none in this version)."""


__all__ = ["ISOLATE_MODES", "IsolationPolicy"]
