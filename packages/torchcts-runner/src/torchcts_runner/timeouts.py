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


BACKSTOP_S = 2.0  # after the watchdog: faulthandler's C thread, which needs no GIL
IDLE_GUARD_S = (
    5.0  # an idle process stands the backstop down this long before it is due
)
_NEVER = float("inf")
Armed = tuple[float, Callable[[], None]]


def backstop_slack(hard_s: float) -> float:
    """How much later than ``hard + BACKSTOP_S`` the backstop may fire, so that one
    faulthandler thread serves every case armed within that span."""
    return min(10.0, 0.5 * hard_s)


class Watchdog:
    """One daemon thread per process, re-armed with a timestamp: no thread per case.

    Arming stores ``(deadline, on_fire)``; the thread sleeps until the deadline it
    last read and is woken (`Condition.notify`) only when a new deadline is earlier
    than that. On waking it reads the newest arming, so a stream of cases costs one
    wake-up per limit, not two notifications per case.

    The backstop is faulthandler's C thread, for a hang holding the GIL (which stops
    this thread too). Starting and joining it per case was most of a fast case's
    cost, so it stays armed while cases follow each other: it is moved only when it
    would fire before ``hard + BACKSTOP_S`` of the new case or more than
    `backstop_slack` after. A process between cases stands it down: at once when it
    is due within IDLE_GUARD_S, else from this thread before that.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        """No thread, nothing armed; also a forked child's start, since it has none
        of the parent's threads."""
        self._cond = threading.Condition()
        self._armed: Armed | None = None
        self._wake_at = _NEVER  # when the thread next reads `_armed`
        self._thread: threading.Thread | None = None
        self._backstop_at: float | None = None
        self._backstop_file: IO[str] | None = None

    def arm(
        self,
        seconds: float,
        on_fire: Callable[[], None],
        backstop_file: IO[str] | None = None,
    ) -> None:
        """Call `on_fire` then end the process unless disarmed within `seconds`."""
        deadline = time.monotonic() + seconds
        self._armed = (deadline, on_fire)  # one store, read whole by the thread
        if deadline < self._wake_at:  # it sleeps past this deadline, or never started
            with self._cond:
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(
                        target=self._loop, name="torchcts-watchdog", daemon=True
                    )
                    self._thread.start()
                self._cond.notify()
                self._wake_at = deadline  # it reads `_armed` afresh once woken
        if backstop_file is not None:
            due = deadline + BACKSTOP_S
            at = self._backstop_at
            if (
                at is None
                or not due <= at <= due + backstop_slack(seconds)
                or backstop_file is not self._backstop_file
            ):
                with self._cond:
                    self._move_backstop(due + backstop_slack(seconds), backstop_file)

    def armed(self) -> Armed | None:
        """The current arming: its hard deadline (monotonic) and callback."""
        return self._armed

    def disarm(self) -> None:
        """The case returned in time."""
        self._armed = None  # the thread finds it so when it next wakes
        at = self._backstop_at
        if at is not None and at - time.monotonic() < IDLE_GUARD_S:
            with self._cond:
                self._stand_down()

    def _move_backstop(self, at: float, backstop_file: IO[str]) -> None:
        faulthandler.dump_traceback_later(
            max(at - time.monotonic(), 0.001), exit=True, file=backstop_file
        )
        self._backstop_at, self._backstop_file = at, backstop_file

    def _stand_down(self) -> None:
        """Cancel the backstop unless a case is armed again (caller holds the lock)."""
        if self._backstop_at is None or self._armed is not None:
            return
        faulthandler.cancel_dump_traceback_later()
        self._backstop_at = None
        armed = self.armed()  # armed meanwhile (arm saw the old backstop): restore it
        if armed is not None and self._backstop_file is not None:
            self._move_backstop(armed[0] + BACKSTOP_S, self._backstop_file)

    def _loop(self) -> None:
        with self._cond:
            while True:
                armed = self._armed
                if armed is not None:
                    wake = armed[0]
                elif self._backstop_at is not None:
                    wake = self._backstop_at - IDLE_GUARD_S
                else:
                    wake = _NEVER
                self._wake_at = wake
                if self._armed is not armed:  # re-armed while we looked: look again
                    continue
                remaining = wake - time.monotonic()
                if remaining > 0:
                    self._cond.wait(None if wake == _NEVER else remaining)
                    continue
                if armed is None:
                    self._stand_down()
                    continue
                if self._armed is armed:  # not disarmed at the last moment
                    on_fire = armed[1]
                    break
        try:
            on_fire()
        finally:
            os._exit(HARD_TIMEOUT_EXIT)


WATCHDOG = Watchdog()
os.register_at_fork(after_in_child=WATCHDOG._reset)


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
    WATCHDOG.arm(limit_s + grace_for(limit_s), on_hard_timeout, backstop_file)
    try:
        yield
    finally:
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
