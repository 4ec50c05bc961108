"""Process-group housekeeping and file tails: the small OS-facing helpers.

Children run in their own session, so their process-group id is their pid and every
descendant that did not call ``setsid`` itself shares it; ``kill_group`` ends them all.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

TAIL_BYTES = 8192


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to every process in the group; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether any process (zombies included) is left in the group."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def file_size(path: Path) -> int:
    """Size of a file, 0 when it does not exist yet."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_from(path: Path, offset: int, limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` bytes written to ``path`` after ``offset``, as text."""
    if file_size(path) <= offset:
        return ""  # nothing new (the usual case after each case): no open, no read
    try:
        with open(path, "rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            fh.seek(max(offset, end - limit))
            data = fh.read(limit)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if end - offset > limit:
        text = "[...]" + text.split("\n", 1)[-1] if "\n" in text else text
    return text
