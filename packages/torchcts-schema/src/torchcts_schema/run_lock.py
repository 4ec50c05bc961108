"""One run per results directory: an advisory lock that names its holder.

Two runs writing the same results dir would rotate each other's journal and delete
each other's scratch files. The lock is ``fcntl.flock`` on ``<results>/.torchcts.lock``:
the kernel drops it when the holding process dies, however it dies, so a lock can
never go stale; the file only says who holds it (pid, start time, command) for the
refusal message. The file is emptied on release, never deleted (deleting it would
let a second process lock a new file while a third still waits on the old one).

Readers of a results directory (the submission archive, the report) ask `live_holder`
whether a run still writes there, and name the holder the way a second run's refusal
does.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from torchcts_schema.errors import ArtifactError

LOCK_NAME = ".torchcts.lock"


class RunLockedError(ArtifactError):
    """Another live run holds the results directory."""


class RunLock:
    """The lock of one results directory, held by this process until `release`."""

    def __init__(self, results_dir: Path) -> None:
        self.results_dir = results_dir
        self.path = results_dir / LOCK_NAME
        self._fd = -1

    @property
    def held(self) -> bool:
        """Does this process hold the lock?"""
        return self._fd >= 0

    def acquire(self, command: str = "") -> None:
        """Take the lock or raise `RunLockedError` naming the holder."""
        if self.held:
            return
        self.results_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _take(fd):
            holder = _describe(_read_holder(fd))
            os.close(fd)
            raise RunLockedError(
                self.results_dir,
                f"another TorchCTS run is writing here ({holder}); wait for it to "
                "end, or give this run its own directory with --results DIR",
            ) from None
        body = {
            "pid": os.getpid(),
            "started_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": command,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(body) + "\n").encode("utf-8"), 0)
        self._fd = fd

    def release(self) -> None:
        """Empty the holder note and drop the lock; safe twice."""
        if not self.held:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        os.close(self._fd)  # closing the descriptor drops the flock
        self._fd = -1


def _take(fd: int, tries: int = 10, pause_s: float = 0.02) -> bool:
    """The exclusive lock, or False while a run holds it. A holder that has written
    no note yet is a `live_holder` probe (it lets go within microseconds) or a run
    starting this very moment: asked again for up to 0.2 s before giving up."""
    for attempt in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if _read_holder(fd) or attempt == tries - 1:
                return False
            time.sleep(pause_s)
    return False


def live_holder(results_dir: Path) -> str | None:
    """Who holds `results_dir`'s lock (``pid N, since T, command: ...``), or None when
    no live run does.

    The probe takes the lock shared and drops it at once, from a descriptor opened
    read-only, and never creates the file: a directory no run ever wrote has none.
    A run starting in the same microseconds finds the lock taken with no holder
    note and asks again (`_take`).
    """
    try:
        fd = os.open(results_dir / LOCK_NAME, os.O_RDONLY)
    except OSError:  # no lock file (or unreadable): no run holds it here
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _describe(_read_holder(fd))
    except OSError:
        return None
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_holder(fd: int) -> dict[str, object]:
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace") or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _describe(holder: dict[str, object]) -> str:
    parts = []
    if holder.get("pid"):
        parts.append(f"pid {holder['pid']}")
    if holder.get("started_at"):
        parts.append(f"since {holder['started_at']}")
    if holder.get("command"):
        parts.append(f"command: {str(holder['command'])[:200]}")
    return ", ".join(parts) or "holder unknown"


__all__ = ["LOCK_NAME", "RunLock", "RunLockedError", "live_holder"]
