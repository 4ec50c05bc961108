"""An xdist worker that leaves on purpose because its device broke, and is replaced.

xdist starts a new worker when one exits and hands the cases it held to the others; it
reports the exit as a crash "while running" the case whose run had not finished, which
is the case after which the worker left (its reports are already with the controller).
The worker leaves a marker naming that case first, so the controller reads the exit
as a replacement, never as the case's crash.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NoReturn

from torchcts_schema import write_atomic

REPLACED_EXIT = 75  # EX_TEMPFAIL: the worker left so that a fresh one takes over


def replacement_marker_path(scratch: Path, worker: str) -> Path:
    """The marker a worker leaves before it exits to be replaced."""
    return scratch / f"replaced-{worker}.json"


def leave_for_replacement(scratch: Path, worker: str, case_id: str) -> NoReturn:
    """Leave the marker, then end this process at once (nothing of it is reusable)."""
    marker = json.dumps({"case_id": case_id})
    write_atomic(replacement_marker_path(scratch, worker), marker, fsync=True)
    os._exit(REPLACED_EXIT)


def replaced_after(scratch: Path, worker: str) -> str | None:
    """The case after which `worker` left to be replaced (its marker is consumed)."""
    path = replacement_marker_path(scratch, worker)
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    path.unlink(missing_ok=True)
    case_id = data.get("case_id") if isinstance(data, dict) else None
    return case_id if isinstance(case_id, str) else None


__all__ = [
    "REPLACED_EXIT",
    "leave_for_replacement",
    "replaced_after",
    "replacement_marker_path",
]
