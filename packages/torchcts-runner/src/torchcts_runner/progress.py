"""Progress: a live line with counts per status, rate and time left; or quiet lines.

The live form rewrites one terminal line at most a few times a second. The quiet form
(not a tty, ``--torchcts-quiet``, or verbose pytest output) prints a full line at most
every `quiet_every_s` seconds, which reads well in CI logs.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from torchcts_schema import Status

_SHORT = {
    Status.PASSED: "pass",
    Status.FAILED: "fail",
    Status.ERROR: "err",
    Status.UNSUPPORTED: "unsup",
    Status.SKIPPED: "skip",
    Status.CRASHED: "crash",
    Status.NOT_RUN: "not_run",
}


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


class Progress:
    """Counts finished cases and draws them through `write`."""

    def __init__(
        self,
        total: int,
        write: Callable[[str], None],
        *,
        live: bool,
        live_every_s: float = 0.2,
        quiet_every_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.done = 0
        self.counts: Counter[Status] = Counter()
        self._write = write
        self.live = live
        self._every = live_every_s if live else quiet_every_s
        self._clock = clock
        self._start = clock()
        self._last = self._start
        self._drawn = False

    def line(self) -> str:
        """``[312/1200] pass 300 fail 8 ... | 41.2/s | ~0m21s left``."""
        elapsed = self._clock() - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        counts = " ".join(
            f"{_SHORT[s]} {self.counts[s]}" for s in Status if self.counts[s]
        )
        left = (
            _duration((self.total - self.done) / rate)
            if rate > 0 and self.total > self.done
            else "-"
        )
        return f"[{self.done}/{self.total}] {counts} | {rate:.1f}/s | ~{left} left"

    def add(self, status: Status) -> None:
        """One case finished."""
        self.done += 1
        self.counts[status] += 1
        now = self._clock()
        if now - self._last >= self._every or self.done == self.total:
            self._last = now
            self._draw()

    def _draw(self) -> None:
        if self.live:
            self._write("\r\x1b[2K" + self.line())
            self._drawn = True
        else:
            self._write(self.line() + "\n")

    def close(self) -> None:
        """End the live line so later output starts on a fresh line."""
        if self.live and self._drawn:
            self._write("\n")
            self._drawn = False


__all__ = ["Progress"]
