"""The per-case time limit, in two stages, for a case running in this process.

Stage one (at the limit) raises `CaseTimeout` in the main thread through SIGALRM; that
stops a case stuck in Python code and the process carries on. Stage two (the limit plus
a grace period) is a watchdog thread for a hang Python signals cannot interrupt (native
code): it calls the process's `on_hard_timeout` callback, which leaves evidence, and
then ends the process, exactly as pytest-timeout's thread method would.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import IO

from torchcts_isolate import HARD_TIMEOUT_EXIT


class CaseTimeout(BaseException):
    """Raised in the main thread when a case reaches its time limit."""

    def __init__(self, limit_s: float) -> None:
        super().__init__(f"case exceeded its {limit_s:g}s time limit")
        self.limit_s = limit_s


def grace_for(limit_s: float) -> float:
    """How long after the limit the watchdog waits before ending the process."""
    return min(10.0, max(1.0, 0.25 * limit_s))


class Watchdog:
    """One daemon thread per process; armed around each case, so no thread per case."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._on_fire: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, on_fire: Callable[[], None]) -> None:
        """Call `on_fire` then end the process unless disarmed within `seconds`."""
        with self._cond:
            self._deadline = time.monotonic() + seconds
            self._on_fire = on_fire
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="torchcts-watchdog", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def disarm(self) -> None:
        """The case returned in time."""
        with self._cond:
            self._deadline = None
            self._on_fire = None
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._deadline is None:
                    self._cond.wait()
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                on_fire = self._on_fire
                self._deadline, self._on_fire = None, None  # fire once
            try:
                if on_fire is not None:
                    on_fire()
            finally:
                os._exit(HARD_TIMEOUT_EXIT)


WATCHDOG = Watchdog()


BACKSTOP_S = 2.0  # after the watchdog: faulthandler's C thread, which needs no GIL


@contextmanager
def case_deadline(
    limit_s: float | None,
    on_hard_timeout: Callable[[], None],
    backstop_file: IO[str] | None = None,
) -> Iterator[None]:
    """Enforce `limit_s` around a case; None or 0 means no limit.

    A hang that holds the GIL (a deadlocked driver) stops every Python thread, the
    watchdog included; `backstop_file` arms faulthandler's own C thread a little later,
    which dumps the tracebacks there and ends the process regardless.
    """
    if not limit_s or limit_s <= 0:
        yield
        return
    in_main = threading.current_thread() is threading.main_thread()
    previous = None
    if in_main:

        def _alarm(signum: int, frame: FrameType | None) -> None:
            raise CaseTimeout(limit_s)

        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, limit_s)
    hard = limit_s + grace_for(limit_s)
    WATCHDOG.arm(hard, on_hard_timeout)
    if backstop_file is not None:
        faulthandler.dump_traceback_later(
            hard + BACKSTOP_S, exit=True, file=backstop_file
        )
    try:
        yield
    finally:
        if backstop_file is not None:
            faulthandler.cancel_dump_traceback_later()
        WATCHDOG.disarm()
        if in_main:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous or signal.SIG_DFL)


__all__ = [
    "BACKSTOP_S",
    "HARD_TIMEOUT_EXIT",
    "WATCHDOG",
    "CaseTimeout",
    "case_deadline",
    "grace_for",
]
