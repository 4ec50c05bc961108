"""Isolation decided during a run: the rest of a crashing op, and cases to retry.

Adaptive isolation (cases that crashed in earlier runs of this run key) is decided
once, by the controller, before this run's first case, so a crash during the run is
never mistaken for earlier evidence. A case that takes its worker down costs a worker restart (seconds); an op with a
hundred crashing samples would cost minutes. After the first crash the controller
decides that the rest of that op runs isolated, in the warm pool, for the remainder
of the run; and a case whose process vanished without evidence (SIGKILL, nothing
left) is retried once, isolated, so its record rests on what the retry shows. The
decisions live in one small file in the run's scratch dir, rewritten atomically by
the controller and read by every executing process before each case (a ``stat``
call while it is unchanged). Nothing is skipped: isolated cases still execute.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_schema import write_atomic

AFTER_CRASH = "after_crash"  # the record's isolation: its op crashed earlier this run
RETRY = "retry"  # the record's isolation: its first process vanished without evidence
ADAPTIVE = "adaptive"  # the record's isolation: it crashed in an earlier run


def decisions_path(scratch: Path) -> Path:
    """The decisions file of a run."""
    return scratch / "isolation-decisions.json"


@dataclass
class IsolationDecisions:
    """Ops (``suite/op``) whose remaining cases run isolated, and cases to retry."""

    ops: dict[str, str] = field(default_factory=dict)  # "suite/op" -> why
    cases: dict[str, str] = field(default_factory=dict)  # case id -> why
    adaptive: list[str] = field(default_factory=list)  # crashed in an earlier run

    def to_dict(self) -> dict[str, Any]:
        """JSON form (also journaled as a diagnostic)."""
        return {
            "ops": dict(sorted(self.ops.items())),
            "cases": dict(self.cases),
            "adaptive": sorted(self.adaptive),
        }

    def write(self, scratch: Path) -> None:
        """Replace the file every executor reads."""
        write_atomic(decisions_path(scratch), json.dumps(self.to_dict()), fsync=False)


def op_key(suite: str, op: str) -> str:
    """How an op is named in the decisions."""
    return f"{suite}/{op}"


class DecisionReader:
    """Reads the decisions file again only when it changed."""

    def __init__(self, scratch: Path) -> None:
        self.path = decisions_path(scratch)
        self._stamp: tuple[int, int] | None = None
        self.decisions = IsolationDecisions()
        self._adaptive: frozenset[str] = frozenset()

    def mode_for(self, spec: Any) -> str | None:
        """`RETRY`, `AFTER_CRASH` or None (no run-time decision about this case)."""
        self._refresh()
        if spec.case_id in self.decisions.cases:
            return RETRY
        if spec.case_id in self._adaptive:
            return ADAPTIVE
        if op_key(spec.suite, spec.op) in self.decisions.ops:
            return AFTER_CRASH
        return None

    def _refresh(self) -> None:
        try:
            info = os.stat(self.path)
        except OSError:
            return
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp == self._stamp:
            return
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            return  # mid-replace on an odd filesystem: read it at the next case
        self._stamp = stamp
        self.decisions = IsolationDecisions(
            ops=dict(data.get("ops") or {}),
            cases=dict(data.get("cases") or {}),
            adaptive=list(data.get("adaptive") or []),
        )
        self._adaptive = frozenset(self.decisions.adaptive)


__all__ = [
    "ADAPTIVE",
    "AFTER_CRASH",
    "RETRY",
    "DecisionReader",
    "IsolationDecisions",
    "decisions_path",
    "op_key",
]
