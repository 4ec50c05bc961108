"""A run's processes watched from outside: which of them loaded torch, and when, and
the CPU seconds the run's processes had used by a given moment.

Time to first case is a wall figure, and on a shared 2-core machine the load moves
it by seconds; the CPU seconds the run spent before its first case, and how many
interpreters had loaded torch by then, are steadier and say where it went (a
controller, a probe child and two workers each importing torch on the same cores).
Read from ``/proc`` (Linux): each poll walks the run's process tree through
``/proc/PID/task/TID/children``, samples each process's user + system time from
``/proc/PID/stat`` and, until it is seen, looks for libtorch in ``/proc/PID/maps``.
A process keeps its last sample after it exits; one that lives less than a poll
(0.1 s) is not seen. Elsewhere (no ``/proc``) nothing is seen and the figures read
NaN.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
TORCH_LIBRARY = b"libtorch_cpu"  # every torch build maps it (cuda and rocm too)
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def children(pid: int, proc: Path = PROC) -> list[int]:
    """The direct children of `pid` (every thread's), [] once it has gone."""
    out: list[int] = []
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out += [int(w) for w in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return out


def cpu_seconds(pid: int, proc: Path = PROC) -> float | None:
    """User + system seconds `pid` has used itself (None once it has gone)."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: count fields after its ")"
    fields = stat.rpartition(")")[2].split()
    try:
        return (int(fields[11]) + int(fields[12])) / TICKS
    except (IndexError, ValueError):
        return None


def has_torch(pid: int, proc: Path = PROC) -> bool:
    """Does `pid` map torch's library?"""
    try:
        return TORCH_LIBRARY in (proc / str(pid) / "maps").read_bytes()
    except OSError:
        return False


@dataclass
class ProcessWatch:
    """The process tree under `root`, sampled at each `poll`."""

    root: int
    proc: Path = PROC
    torch_at: dict[int, float] = field(default_factory=dict)  # pid -> first seen
    cpu: dict[int, float] = field(default_factory=dict)  # pid -> last sample

    def poll(self, moment: float) -> None:
        """Sample every process of the tree now (`moment`: seconds after launch)."""
        todo, seen = [self.root], set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            used = cpu_seconds(pid, self.proc)
            if used is None:
                continue
            self.cpu[pid] = used
            if pid not in self.torch_at and has_torch(pid, self.proc):
                self.torch_at[pid] = moment
            todo += children(pid, self.proc)

    def cpu_s(self) -> float:
        """CPU seconds of every process seen, at its last sample."""
        return sum(self.cpu.values()) if self.cpu else float("nan")

    def torch_by(self, moment: float) -> int:
        """How many processes had loaded torch by `moment`."""
        return sum(1 for at in self.torch_at.values() if at <= moment)


__all__ = ["ProcessWatch", "children", "cpu_seconds", "has_torch"]
