"""Device memory per executing process, gathered for the run metadata.

Each process that ran cases in process (an xdist worker, or the one process of a run
without xdist) reads its device's counters once, at its session's end
(`DeviceAdapter.memory_stats`: allocated and peak bytes where the family offers
them); a worker sends them to the controller in xdist's ``workeroutput``. The
metadata's ``device_memory`` maps each process to its numbers (a replaced worker's
successor keeps the larger of each). Isolation children are not counted: their
memory ends with them.
"""

from __future__ import annotations

from typing import Any

WORKER_OUTPUT_KEY = "torchcts_device_memory"


class MemoryTally:
    """The numbers each process reported, by worker id."""

    def __init__(self) -> None:
        self.by_worker: dict[str, dict[str, int]] = {}

    def add(self, worker: str, stats: Any) -> None:
        """Keep what `worker` reported (anything but a name -> int table is
        ignored: it came over the wire from another process)."""
        if not isinstance(stats, dict):
            return
        seen = self.by_worker.setdefault(worker, {})
        for name, value in stats.items():
            if isinstance(name, str) and type(value) is int:
                seen[name] = max(value, seen.get(name, value))

    def as_option(self) -> dict[str, dict[str, int]] | None:
        """The metadata value, sorted; None when no process reported numbers."""
        found = {w: dict(sorted(s.items())) for w, s in self.by_worker.items() if s}
        return dict(sorted(found.items())) or None


__all__ = ["WORKER_OUTPUT_KEY", "MemoryTally"]
