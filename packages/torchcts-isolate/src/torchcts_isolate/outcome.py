"""How an isolated case ended, in words a reviewer can check.

`IsolatedOutcome` keeps the raw facts (result, exit code, signal name, timeout, hang,
memory, tails); `crash_info` turns them into the schema's `CrashInfo` without ever
softening them: a case that did not return a result is a crash of some kind.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from torchcts_schema import CrashInfo

from torchcts_isolate.ending import HARD_TIMEOUT_EXIT, ProcessEnding, crash_for


@dataclass
class IsolatedOutcome:
    """Everything the parent learnt about one case run in a child interpreter."""

    result: dict[str, Any] | None  # what the entry returned, when it returned
    exit_code: int | None  # the child's own exit status when it exited
    signal: str | None  # e.g. "SIGSEGV" when a signal ended the child
    timed_out: bool
    hung: bool
    memory_exceeded: bool
    stdout_tail: str
    stderr_tail: str
    traceback: str | None  # faulthandler dump (or the entry's Python traceback)
    duration_s: float
    exception: str | None = None  # "Type: message" when the entry raised
    detail: str = ""  # one line saying how the case ended
    limit_s: float | None = None  # the per-case limit that applied
    memory_mb: int | None = None  # the memory limit that applied

    def crash_info(self) -> CrashInfo | None:
        """The crash this outcome proves, or None when the entry returned a result."""
        if self.result is not None:
            return None
        return crash_for(
            ProcessEnding(
                exit_status=self.exit_code,
                signal=self.signal,
                fault_text=self.traceback or "",
                hung=self.hung,
                timed_out=self.timed_out,
                entry_raised=self.exception is not None,
                detail=self.detail,
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (for crash records and debugging)."""
        return asdict(self)


def describe(outcome: IsolatedOutcome) -> str:
    """The one-line summary stored in ``detail``."""
    if outcome.result is not None:
        return "the child returned a result"
    if outcome.timed_out:
        return f"no result within the per-case limit of {outcome.limit_s:g}s"
    if outcome.hung:
        return (
            f"no heartbeat for {outcome.limit_s:g}s: the child was stuck, most likely "
            f"in native code holding the GIL"
        )
    if outcome.signal is not None:
        how = f"the child was killed by {outcome.signal}"
    elif outcome.exit_code == HARD_TIMEOUT_EXIT:
        how = "the case outlived its limit and the child's watchdog ended it"
    elif outcome.exception is not None:
        how = f"the entry raised {outcome.exception.rstrip(': ')}"
    else:
        how = f"the child exited with code {outcome.exit_code} before returning"
    if outcome.memory_exceeded:
        how = f"the case exceeded the memory limit of {outcome.memory_mb} MB ({how})"
    return how[:500]
