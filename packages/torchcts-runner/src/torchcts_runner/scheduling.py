"""xdist's load scheduler, made to survive workers that die at the same moment.

When a worker dies, xdist reassigns its pending cases and tops up the other workers at
once. If one of those died in the same instant (a crash storm), sending to it raises
``OSError: cannot send (already closed?)`` from inside xdist's event handler, which
aborts the whole run with an INTERNALERROR and loses both crashed cases. Here a send
to a dead worker is undone instead: the cases go back to the front of the queue, and
the dead worker's own "node down" event, which comes next, is handled as usual (its
crashed case gets its record and a replacement worker starts).
"""

from __future__ import annotations

import contextlib
from typing import Any

from xdist.scheduler import LoadScheduling


class CrashTolerantScheduling(LoadScheduling):  # type: ignore[misc]
    """`LoadScheduling` whose sends to an already dead worker are undone."""

    def _send_tests(self, node: Any, num: int) -> None:
        tests = list(self.pending[:num])
        try:
            super()._send_tests(node, num)
        except OSError:
            held = self.node2pending.get(node)
            if held is not None and tests and held[-len(tests) :] == tests:
                del held[-len(tests) :]
            self.pending[:0] = tests

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        """As xdist's, but a worker that cannot even take its shutdown is left to its
        own node-down event."""
        with contextlib.suppress(OSError):
            super().check_schedule(node, duration)


__all__ = ["CrashTolerantScheduling"]
