"""``<key>_runlog.txt``: the latest 32 test starts, for crash and hang diagnosis.

The file is a ring of 32 fixed-width lines rewritten in place, so it never grows and
each start costs one small write. A line is ``<seq> <UTC time> <worker> <node id>``;
the highest sequence number is the latest start. Readers sort by sequence.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from torchcts_schema import ResultsLayout

SLOTS = 32
WIDTH = 256  # bytes per line, newline included


def runlog_path(results_dir: Path, run_key: str) -> Path:
    """Where a run key's runlog lives."""
    return ResultsLayout(results_dir, run_key).runlog


@dataclass(frozen=True)
class RunlogEntry:
    """One test start."""

    seq: int
    time: str
    worker: str
    node_id: str

    def line(self) -> str:
        """The human line (without padding)."""
        return f"{self.seq:08d} {self.time} {self.worker} {self.node_id}"


def _format(entry: RunlogEntry) -> bytes:
    text = entry.line().encode("ascii", "replace")
    if len(text) > WIDTH - 1:
        text = text[: WIDTH - 4] + b"..."
    return text.ljust(WIDTH - 1) + b"\n"


def read_runlog(path: Path) -> list[RunlogEntry]:
    """Every start in the ring, oldest first; a missing file is an empty log."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    entries = []
    for raw in data.decode("ascii", "replace").splitlines():
        parts = raw.strip().split(" ", 3)
        if len(parts) != 4 or not parts[0].isdigit():
            continue
        entries.append(RunlogEntry(int(parts[0]), parts[1], parts[2], parts[3]))
    return sorted(entries, key=lambda e: e.seq)


class RunLog:
    """A writer; every process that starts cases has one (xdist workers included).

    Starts from several processes are serialised with an advisory lock on the file,
    so sequence numbers stay unique and the ring keeps the latest 32 overall.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._written = 0  # the sequence number of this writer's latest start
        with self._locked():
            if os.fstat(self._fd).st_size != SLOTS * WIDTH:
                existing = read_runlog(path)
                lines = [b" " * (WIDTH - 1) + b"\n"] * SLOTS
                for entry in existing[-SLOTS:]:
                    lines[(entry.seq - 1) % SLOTS] = _format(entry)
                os.ftruncate(self._fd, 0)
                os.pwrite(self._fd, b"".join(lines), 0)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _last_seq(self) -> int:
        data = os.pread(self._fd, SLOTS * WIDTH, 0)
        seqs = [
            int(line[:8]) for line in data.split(b"\n") if line[:8].strip().isdigit()
        ]
        return max(seqs, default=0)

    def _next_seq(self) -> int:
        """The sequence number of the next start (under the lock).

        When this writer wrote the latest start, the slot the next one takes still
        holds an older number (or nothing): one 8-byte read instead of parsing the
        ring (24 us of every case's start). Numbers are handed out consecutively, so
        any other writer's start since ours would have filled exactly that slot.
        """
        if self._written:
            head = os.pread(self._fd, 8, (self._written % SLOTS) * WIDTH)
            if not head.strip() or (head.isdigit() and int(head) <= self._written):
                return self._written + 1
        return self._last_seq() + 1

    def start(self, node_id: str, worker: str) -> RunlogEntry:
        """Record that `worker` starts `node_id` now."""
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        with self._locked():
            seq = self._next_seq()
            entry = RunlogEntry(seq, stamp, worker, node_id)
            os.pwrite(self._fd, _format(entry), ((seq - 1) % SLOTS) * WIDTH)
            self._written = seq
        return entry

    def close(self) -> None:
        """Close the file; safe twice."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def tail_lines(path: Path, count: int = SLOTS) -> list[str]:
    """The latest `count` starts as text lines, oldest first (for crash records)."""
    return [e.line() for e in read_runlog(path)[-count:]]


__all__ = ["RunLog", "RunlogEntry", "read_runlog", "runlog_path", "tail_lines"]
