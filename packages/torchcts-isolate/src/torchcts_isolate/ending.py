"""How a process that was running a case ended, as one `CrashInfo`: the one place.

Every path that loses a process in a case asks this module what that means, so the
same fault gives the same status and kind wherever the case ran (`--isolate
none|ledger|adaptive|all`): an xdist worker that died, a process that died before
`--resume`, and an isolation child. The kinds, in the order they are decided:

- ``hang``: the process stopped responding altogether (no heartbeat, or
  faulthandler's C watchdog fired because no Python thread could run: native code
  holding the GIL);
- ``timeout``: the case outlived its limit and a watchdog ended it (Python could
  still run, but the case would not return);
- ``signal``: a signal ended it (faulthandler names fatal ones; the exit status names
  the rest);
- ``subprocess``: it exited with a status of its own during the case (or an
  isolation child's entry raised instead of returning a record);
- ``worker_lost``: it is gone and left no status, signal or marker.
"""

from __future__ import annotations

import re
import signal as _signal
from dataclasses import dataclass

from torchcts_schema import CrashInfo, CrashKind

HARD_TIMEOUT_EXIT = 86  # exit status of a process ended by the runner's watchdog
_FATAL = {
    "Segmentation fault": "SIGSEGV",
    "Aborted": "SIGABRT",
    "Bus error": "SIGBUS",
    "Floating-point exception": "SIGFPE",
    "Floating point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
}
_FAULTHANDLER_TIMEOUT = re.compile(r"^Timeout \(\d+:\d\d:\d\d(\.\d+)?\)!", re.MULTILINE)
_FATAL_ERROR = re.compile(r"Fatal Python error: ([^\n]+)")
# signals another process (a user, a scheduler, the OOM killer) may have sent
EXTERNAL_SIGNALS = frozenset({"SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"})


def signal_name(number: int) -> str:
    """``11`` -> ``"SIGSEGV"``; unknown numbers keep their number (``"SIG99"``)."""
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


@dataclass(frozen=True)
class ProcessEnding:
    """The raw facts about a process that ended while running a case."""

    exit_status: int | None = None  # Popen style: negative means killed by a signal
    signal: str | None = None  # the ending signal's name, when known without a status
    fault_text: str = ""  # the process's faulthandler output
    hung: bool = False  # its heartbeat stopped (isolation child)
    timed_out: bool = False  # a parent's limit ran out and the parent ended it
    watchdog_limit_s: float | None = None  # the process's own watchdog left a marker
    entry_raised: bool = False  # an isolation child's entry raised instead of returning
    detail: str = ""  # how the observer describes it, when it knows better


def crash_for(ending: ProcessEnding) -> CrashInfo:
    """The `CrashInfo` these facts prove (see the module docstring for the order)."""
    status = ending.exit_status
    code = status if status is not None and status >= 0 else None
    if ending.hung or _FAULTHANDLER_TIMEOUT.search(ending.fault_text):
        return CrashInfo(
            CrashKind.HANG,
            exit_code=code,
            detail=ending.detail
            or "the process stopped responding (native code holding the GIL: no "
            "Python thread could run) past the per-case limit and was ended",
        )
    if (
        ending.timed_out
        or ending.watchdog_limit_s is not None
        or status == HARD_TIMEOUT_EXIT
    ):
        limit = ending.watchdog_limit_s
        detail = ending.detail or (
            f"still running past the per-case limit of {limit:g}s plus grace (native "
            "code Python signals cannot interrupt); the watchdog ended the process"
            if limit is not None
            else "the case outlived its limit and the watchdog ended the process"
        )
        return CrashInfo(CrashKind.TIMEOUT, exit_code=code, detail=detail)
    fatal = _FATAL_ERROR.search(ending.fault_text)
    if fatal:
        cause = fatal.group(1).strip()
        name = _FATAL.get(cause) or _signal_of(ending)
        return CrashInfo(
            CrashKind.SIGNAL,
            signal=name,
            exit_code=status,
            detail=ending.detail or cause,
        )
    name = _signal_of(ending)
    if name is not None:
        return CrashInfo(
            CrashKind.SIGNAL,
            signal=name,
            exit_code=status,
            detail=ending.detail or f"killed by {name}",
        )
    if status is not None or ending.entry_raised:
        return CrashInfo(
            CrashKind.SUBPROCESS,
            exit_code=status,
            detail=ending.detail
            or f"the process exited with status {status} during the case",
        )
    return CrashInfo(
        CrashKind.WORKER_LOST,
        detail=ending.detail
        or "the process running the case ended without leaving a signal, exit "
        "status or timeout marker",
    )


def _signal_of(ending: ProcessEnding) -> str | None:
    if ending.signal:
        return ending.signal
    status = ending.exit_status
    return signal_name(-status) if status is not None and status < 0 else None


def may_be_external(crash: CrashInfo) -> bool:
    """Could something other than the case have ended the process?

    SIGKILL, SIGTERM and friends are what users, schedulers and the OOM killer send;
    a process that simply vanished left nothing at all. Such an ending is no evidence
    against the case by itself: the runner retries the case once, isolated, and the
    retry's own ending is its record.
    """
    if crash.kind is CrashKind.WORKER_LOST:
        return True
    return crash.kind is CrashKind.SIGNAL and crash.signal in EXTERNAL_SIGNALS


__all__ = [
    "EXTERNAL_SIGNALS",
    "HARD_TIMEOUT_EXIT",
    "ProcessEnding",
    "crash_for",
    "may_be_external",
    "signal_name",
]
