"""Progress: a live line with counts per status, rate and time left; or quiet lines.

The live form rewrites one terminal line at most a few times a second. The quiet form
(not a tty, ``--torchcts-quiet``, or verbose pytest output) prints a full line at most
every `quiet_every_s` seconds, which reads well in CI logs.

When no case has finished for `stall_after_s`, the line names the oldest case still
running and its age instead of a rate that no longer means anything (a hang would
otherwise freeze the line at ``~0m03s left``). A daemon ticker redraws it while no
report arrives. One lock guards every write (the line, the ticker, text of others
through `say` and `foreign`), so nothing interleaves and nothing is written after
`close`.
"""

from __future__ import annotations

import sys
import threading
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
STALL_AFTER_S = 3.0  # no case finished for this long: name the oldest running one
TICK_S = 1.0  # the ticker's period; the hint's age has a resolution of 1 s anyway


def write_stderr(text: str) -> None:
    """The controller's terminal: stderr, flushed at once."""
    sys.stderr.write(text)
    sys.stderr.flush()


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
        stall_after_s: float = STALL_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.done = 0
        self.counts: Counter[Status] = Counter()
        self._write = write
        self.live = live
        self._every = live_every_s if live else quiet_every_s
        self._stall_after = stall_after_s
        self._clock = clock
        self._start = clock()
        self._last = self._start
        self._last_finish = self._start
        self._running: dict[str, float] = {}  # case (node id) -> when it started
        self._hinted: str | None = None  # the case the last stall line named
        self._drawn = False  # the live line is on screen, unterminated
        self._foreign_open = False  # someone else's text ended mid-line
        self._closed = False
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def stalled(self) -> tuple[str, float] | None:
        """The oldest running case and its age, once no case finished for a while."""
        now = self._clock()
        if not self._running or now - self._last_finish < self._stall_after:
            return None
        case, since = min(self._running.items(), key=lambda item: item[1])
        return case, now - since

    def line(self) -> str:
        """``[312/1200] pass 300 fail 8 ... | 41.2/s | ~0m21s left``, or
        ``[312/1200] pass 300 ... | running <case> for 9s`` during a stall."""
        counts = " ".join(
            f"{_SHORT[s]} {self.counts[s]}" for s in Status if self.counts[s]
        )
        head = f"[{self.done}/{self.total}]" + (f" {counts}" if counts else "")
        stall = self.stalled()
        if stall is not None:
            return f"{head} | running {stall[0]} for {int(stall[1])}s"
        elapsed = self._clock() - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (
            _duration((self.total - self.done) / rate)
            if rate > 0 and self.total > self.done
            else "-"
        )
        return f"{head} | {rate:.1f}/s | ~{left} left"

    def started(self, case: str) -> None:
        """A case began running (its age counts from now)."""
        with self._lock:
            self._running.setdefault(case, self._clock())

    def ended(self, case: str) -> None:
        """A case stopped running, recorded or not (a worker died in it)."""
        with self._lock:
            self._running.pop(case, None)

    def add(self, status: Status, case: str | None = None) -> None:
        """One case finished."""
        with self._lock:
            self.done += 1
            self.counts[status] += 1
            if case is not None:
                self._running.pop(case, None)
            now = self._clock()
            self._last_finish = now
            hinted, self._hinted = self._hinted, None
            due = now - self._last >= self._every or self.done == self.total
            if due or (hinted is not None and self.live):
                self._last = now
                self._draw()

    def tick(self) -> None:
        """Redraw during a stall (the ticker calls this; so can a test)."""
        with self._lock:
            stall = None if self._closed else self.stalled()
            if stall is None:
                return
            now = self._clock()
            if self.live or stall[0] != self._hinted or now - self._last >= self._every:
                self._hinted = stall[0]
                self._last = now
                self._draw()

    def _draw(self) -> None:
        if self._closed:
            return
        lead = self._open_line()
        if self.live:
            self._write(lead + "\r\x1b[2K" + self.line())
            self._drawn = True
        else:
            self._write(lead + self.line() + "\n")

    def _end_line(self) -> None:
        if self._drawn:
            self._write("\n")
            self._drawn = False

    def _open_line(self) -> str:
        """A newline when someone else's text (pytest's ``[100%]``) ended mid-line."""
        lead = "\n" if self._foreign_open else ""
        self._foreign_open = False
        return lead

    def say(self, text: str) -> None:
        """Our own other text (phases, the probe table): on a line of its own."""
        with self._lock:
            self._end_line()
            self._write(self._open_line() + text)

    def foreign(self, write: Callable[[], None], *, ends_line: bool) -> None:
        """Someone else's terminal text (pytest, xdist): the live line ends first."""
        with self._lock:
            self._end_line()
            write()
            self._foreign_open = not ends_line

    def start_ticker(self, every_s: float = TICK_S) -> None:
        """Redraw during stalls without waiting for a report (one daemon thread)."""
        if self._ticker is not None:
            return

        def run() -> None:
            while not self._stop.wait(every_s):
                self.tick()

        self._ticker = threading.Thread(
            target=run, name="torchcts-progress", daemon=True
        )
        self._ticker.start()

    def close(self) -> None:
        """Stop the ticker and end the live line so later output starts afresh."""
        self._stop.set()
        with self._lock:
            self._end_line()
            self._closed = True


__all__ = ["STALL_AFTER_S", "Progress", "write_stderr"]
