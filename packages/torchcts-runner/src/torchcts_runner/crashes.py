"""Evidence for a case that took its process down, and the crash record that keeps it.

Each process that executes cases sends faulthandler output to its own scratch file;
the watchdog leaves a marker before ending a hung process. When a worker dies, the
controller reads both (and the worker's exit status, when known) to say *how* the case
ended: signal, timeout, subprocess exit, or worker lost without evidence.
"""

from __future__ import annotations

import faulthandler
import json
import platform
import re
import signal
from pathlib import Path
from typing import IO

from torchcts_schema import CrashInfo, CrashKind, JsonDict, write_atomic

from torchcts_runner.timeouts import HARD_TIMEOUT_EXIT

_FATAL = {
    "Segmentation fault": "SIGSEGV",
    "Aborted": "SIGABRT",
    "Bus error": "SIGBUS",
    "Floating-point exception": "SIGFPE",
    "Floating point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
}
_FAULT_FILES: dict[str, IO[str]] = {}


def scratch_dir(results_dir: Path, run_key: str) -> Path:
    """Per-run working files that are not results (dot-named: not for sharing)."""
    return results_dir / f".{run_key}_scratch"


def fault_path(scratch: Path, worker: str) -> Path:
    """The faulthandler file of `worker`."""
    return scratch / f"fault-{worker}.txt"


def timeout_marker_path(scratch: Path, worker: str) -> Path:
    """The watchdog's marker for `worker`."""
    return scratch / f"timeout-{worker}.json"


def enable_faulthandler(scratch: Path, worker: str) -> None:
    """Send fatal-signal tracebacks of this process to its scratch file."""
    scratch.mkdir(parents=True, exist_ok=True)
    path = fault_path(scratch, worker)
    handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as us
    _FAULT_FILES[worker] = handle
    faulthandler.enable(file=handle, all_threads=True)


def fault_file(worker: str) -> IO[str] | None:
    """The open faulthandler file of `worker` in this process, if enabled."""
    return _FAULT_FILES.get(worker)


def leave_timeout_marker(
    scratch: Path, worker: str, node_id: str, limit_s: float
) -> None:
    """Written by the watchdog just before it ends a hung process."""
    marker = {"node_id": node_id, "limit_s": limit_s}
    write_atomic(timeout_marker_path(scratch, worker), json.dumps(marker), fsync=True)
    handle = _FAULT_FILES.get(worker)
    if handle is not None:
        handle.write(f"torchcts watchdog: {node_id} still running at the limit\n")
        handle.flush()
        faulthandler.dump_traceback(file=handle, all_threads=True)
        handle.flush()


def signal_name(number: int) -> str:
    """``SIGSEGV`` for 11, and so on."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def read_evidence(
    scratch: Path, worker: str, node_id: str, exit_status: int | None
) -> tuple[CrashInfo, str]:
    """How `worker` ended while running `node_id`, and its faulthandler text."""
    fault = _read(fault_path(scratch, worker))
    marker_path = timeout_marker_path(scratch, worker)
    marker = _read(marker_path)
    if marker:
        marker_path.unlink(missing_ok=True)
        try:
            data = json.loads(marker)
        except json.JSONDecodeError:
            data = {}
        if data.get("node_id") in (None, node_id):
            limit = data.get("limit_s")
            detail = (
                f"still running {limit:g}s past the per-case limit plus grace: a hang "
                "Python signals cannot interrupt (native code); the process was ended"
                if isinstance(limit, int | float)
                else "hang past the per-case limit; the process was ended"
            )
            return CrashInfo(CrashKind.TIMEOUT, exit_code=exit_status, detail=detail), (
                fault
            )
    if re.search(r"^Timeout \(\d+:\d\d:\d\d(\.\d+)?\)!", fault, re.MULTILINE):
        return CrashInfo(
            CrashKind.TIMEOUT,
            exit_code=exit_status,
            detail="a hang that held the GIL past the per-case limit (native code "
            "blocking every Python thread); faulthandler's watchdog ended the process",
        ), fault
    match = re.search(r"Fatal Python error: ([^\n]+)", fault)
    if match:
        cause = match.group(1).strip()
        name = _FATAL.get(cause)
        if name is None and exit_status is not None and exit_status < 0:
            name = signal_name(-exit_status)
        return CrashInfo(
            CrashKind.SIGNAL, signal=name, exit_code=exit_status, detail=cause
        ), fault
    if exit_status is not None and exit_status < 0:
        name = signal_name(-exit_status)
        return CrashInfo(
            CrashKind.SIGNAL,
            signal=name,
            exit_code=exit_status,
            detail=f"killed by {name}",
        ), fault
    if exit_status == HARD_TIMEOUT_EXIT:
        return CrashInfo(
            CrashKind.TIMEOUT, exit_code=exit_status, detail="ended by the watchdog"
        ), fault
    if exit_status is not None:
        return CrashInfo(
            CrashKind.SUBPROCESS,
            exit_code=exit_status,
            detail=f"the process exited with status {exit_status} during the case",
        ), fault
    return CrashInfo(
        CrashKind.WORKER_LOST,
        detail="the process running the case ended without leaving a signal, exit "
        "status or timeout marker",
    ), fault


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def environment_summary(
    backend: str, hardware_key: str, device: str, torch_version: str, version: str
) -> JsonDict:
    """Path-free facts about where the crash happened."""
    return {
        "os": platform.system(),
        "python": platform.python_version(),
        "torch_version": torch_version,
        "torchcts_version": version,
        "backend": backend,
        "hardware_key": hardware_key,
        "device": device,
    }


__all__ = [
    "enable_faulthandler",
    "environment_summary",
    "fault_file",
    "fault_path",
    "leave_timeout_marker",
    "read_evidence",
    "scratch_dir",
    "signal_name",
    "timeout_marker_path",
]
