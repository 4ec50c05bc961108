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
from pathlib import Path
from typing import IO

from torchcts_isolate import ProcessEnding, crash_for
from torchcts_schema import CrashInfo, JsonDict, ResultsLayout, write_atomic

_FAULT_FILES: dict[str, IO[str]] = {}


def scratch_dir(results_dir: Path, run_key: str) -> Path:
    """Per-run working files that are not results (dot-named: not for sharing)."""
    return ResultsLayout(results_dir, run_key).scratch


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


def orphan_marker_path(scratch: Path, worker: str) -> Path:
    """Left by a worker that exits because its controller is gone."""
    return scratch / f"orphaned-{worker}.json"


def unusable_marker_path(scratch: Path) -> Path:
    """Where an executing process says the device never worked (the run stops)."""
    return scratch / "device-unusable.txt"


def leave_unusable_marker(scratch: Path, problem: str) -> None:
    """The device failed its probe in a fresh process before any case: no case can
    run on it, so the run stops; the controller reads this at the session's end."""
    write_atomic(unusable_marker_path(scratch), problem, fsync=True)


def device_unusable(scratch: Path) -> str | None:
    """What an executing process found wrong with the device, if it stopped the run."""
    try:
        return unusable_marker_path(scratch).read_text("utf-8")
    except (OSError, ValueError):
        return None


def leave_orphan_marker(scratch: Path, worker: str, node_id: str | None) -> None:
    """Say which case this worker was running when it noticed its controller died,
    so --resume runs that case again instead of blaming it."""
    marker = {"node_id": node_id}
    write_atomic(orphan_marker_path(scratch, worker), json.dumps(marker), fsync=True)


def orphaned_in(scratch: Path, worker: str) -> str | None:
    """The node id an orphaned worker left in its marker, if it left one."""
    try:
        data = json.loads(orphan_marker_path(scratch, worker).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    node_id = data.get("node_id") if isinstance(data, dict) else None
    return node_id if isinstance(node_id, str) else None


def read_evidence(
    scratch: Path, worker: str, node_id: str, exit_status: int | None
) -> tuple[CrashInfo, str]:
    """How `worker` ended while running `node_id`, and its faulthandler text.

    The facts come from the worker's scratch files (faulthandler output, the
    watchdog's marker) and its exit status; `torchcts_isolate.crash_for` says what
    they mean, exactly as for an isolation child.
    """
    fault = _read(fault_path(scratch, worker))
    marker_path = timeout_marker_path(scratch, worker)
    marker = _read(marker_path)
    limit: float | None = None
    watchdog = False
    if marker:
        marker_path.unlink(missing_ok=True)
        try:
            data = json.loads(marker)
        except json.JSONDecodeError:
            data = {}
        if data.get("node_id") in (None, node_id):
            watchdog = True
            value = data.get("limit_s")
            limit = float(value) if isinstance(value, int | float) else None
    ending = ProcessEnding(
        exit_status=exit_status,
        fault_text=fault,
        timed_out=watchdog,
        watchdog_limit_s=limit,
    )
    return crash_for(ending), fault


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
    "leave_orphan_marker",
    "leave_timeout_marker",
    "orphan_marker_path",
    "orphaned_in",
    "read_evidence",
    "scratch_dir",
    "timeout_marker_path",
]
