"""The per-case time limit, in two stages, for a case running in this process.

Stage one (at the limit) raises `CaseTimeout` in the main thread through SIGALRM; that
stops a case stuck in Python code and the process carries on. Stage two (the limit plus
a grace period) is a watchdog thread for a hang Python signals cannot interrupt (native
code): it calls the process's `on_hard_timeout` callback, which leaves evidence, and
then ends the process, exactly as pytest-timeout's thread method would. A limit
reached while the case imports a module raises once the import is done, so no module
is left half initialised for the process's later cases.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import IO, Any

from torchcts_isolate import HARD_TIMEOUT_EXIT


class CaseTimeout(BaseException):
    """Raised in the main thread when a case reaches its time limit."""

    def __init__(self, limit_s: float) -> None:
        super().__init__(f"case exceeded its {limit_s:g}s time limit")
        self.limit_s = limit_s


def grace_for(limit_s: float) -> float:
    """How long after the limit the watchdog waits before ending the process."""
    return min(10.0, max(1.0, 0.25 * limit_s))


def importing(frame: FrameType | None) -> bool:
    """Is `frame` (where the main thread was interrupted) inside an import? The
    import system's frames (finding, loading, running a module's top level) are
    importlib's frozen bootstrap; a script's own top level is not an import."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


IMPORT_TICK_S = 0.05  # how often a limit reached inside an import looks again
BACKSTOP_S = 2.0  # after the watchdog: faulthandler's C thread, which needs no GIL
_NEVER = float("inf")
Armed = tuple[float, Callable[[], None]]


class Watchdog:
    """One daemon thread per process, re-armed with a timestamp: no thread per case.

    Arming stores ``(deadline, on_fire)``; the thread sleeps until the deadline it
    last read and is woken (`Condition.notify`) only when a new deadline is earlier
    than that. On waking it reads the newest arming, so a stream of cases costs one
    wake-up per limit, not two notifications per case.

    A hang holding the GIL stops this thread too; `Backstop` covers that one.
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

    def arm(self, seconds: float, on_fire: Callable[[], None]) -> None:
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

    def armed(self) -> Armed | None:
        """The current arming: its hard deadline (monotonic) and callback."""
        return self._armed

    def disarm(self) -> None:
        """The case returned in time."""
        self._armed = None  # the thread finds it so when it next wakes

    def _loop(self) -> None:
        with self._cond:
            while True:
                armed = self._armed
                wake = _NEVER if armed is None else armed[0]
                self._wake_at = wake
                if self._armed is not armed:  # re-armed while we looked: look again
                    continue
                remaining = wake - time.monotonic()
                if remaining > 0:
                    self._cond.wait(None if wake == _NEVER else remaining)
                    continue
                if (
                    armed is not None and self._armed is armed
                ):  # still armed  # not disarmed at the last moment
                    on_fire = armed[1]
                    break
        try:
            on_fire()
        finally:
            os._exit(HARD_TIMEOUT_EXIT)


WATCHDOG = Watchdog()
os.register_at_fork(after_in_child=WATCHDOG._reset)


class Backstop:
    """faulthandler's C watchdog, for a hang that holds the GIL, armed for many cases.

    ``faulthandler.dump_traceback_later`` starts a C thread and its cancel joins it:
    about 0.3 ms, most of what the deadline guard cost per case and stage. A backstop
    must never fire before a case's hard deadline (plus `BACKSTOP_S`), but may fire
    later, so it is armed for `SPAN` times what a case needs and re-armed only when
    less than that need remains: once per limit of wall time, not per case. A hang
    holding the GIL is then ended between one and `SPAN` times its limit after it
    starts. `release` cancels it wherever this process may wait without a case
    running (no next case known, the session ending), so idle time never ends it.
    """

    SPAN = 2.0

    def __init__(self) -> None:
        self._until = -_NEVER  # monotonic time the armed dump fires at
        self._file: IO[str] | None = None

    def cover(self, seconds: float, file: IO[str]) -> None:
        """Fire no earlier than `seconds` from now (into `file`), and no later than
        `SPAN` times that (a first case's long warm-up allowance must not leave the
        next cases with a backstop minutes away)."""
        now = time.monotonic()
        span = seconds * self.SPAN
        if file is self._file and now + seconds <= self._until <= now + span:
            return
        faulthandler.dump_traceback_later(span, exit=True, file=file)
        self._until = now + span
        self._file = file

    def release(self) -> None:
        """Nothing runs for a while: cancel the armed dump."""
        if self._file is not None:
            faulthandler.cancel_dump_traceback_later()
            self.forget()

    def forget(self) -> None:
        """Someone else cancelled the dump (pytest's faulthandler plugin does, on every
        failed test): the next case arms afresh."""
        self._file = None
        self._until = -_NEVER


BACKSTOP = Backstop()


@contextmanager
def case_deadline(
    limit_s: float | None,
    on_hard_timeout: Callable[[], None],
    backstop_file: IO[str] | None = None,
) -> Iterator[None]:
    """Enforce `limit_s` around a case; None or 0 means no limit.

    A hang that holds the GIL (a deadlocked driver) stops every Python thread, the
    watchdog included; `backstop_file` arms faulthandler's own C thread a little later,
    which dumps the tracebacks there and ends the process regardless (`BACKSTOP`,
    released by the caller when no next case follows).
    """
    if not limit_s or limit_s <= 0:
        yield
        return
    in_main = threading.current_thread() is threading.main_thread()
    previous = None
    if in_main:

        def _alarm(signum: int, frame: FrameType | None) -> None:
            if importing(frame):
                # raised here, the exception would leave a module half initialised
                # (removed from sys.modules, its submodules kept) and break every
                # later case that needs it: let the import finish, then raise; the
                # watchdog still ends an import stuck past the hard deadline
                signal.setitimer(signal.ITIMER_REAL, IMPORT_TICK_S)
                return
            raise CaseTimeout(limit_s)

        previous = _swap_alarm_handler(_alarm)
        signal.setitimer(signal.ITIMER_REAL, limit_s)
    hard = limit_s + grace_for(limit_s)
    WATCHDOG.arm(hard, on_hard_timeout)
    if backstop_file is not None:
        BACKSTOP.cover(hard + BACKSTOP_S, backstop_file)
    try:
        yield
    finally:
        WATCHDOG.disarm()
        if in_main:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _swap_alarm_handler(_RAW_DEFAULT if previous is None else previous)


def _swap_alarm_handler(handler: Any) -> Any:
    """Install `handler` for SIGALRM and return the one it replaced, as
    ``signal.signal`` does without its enum conversions: those raise and catch a
    ValueError for every Python handler (6.5 us a pair, twice a case). What it
    returns is what it accepts back (SIG_DFL and SIG_IGN as its own int objects;
    None for a handler not installed from Python)."""
    return _RAW_SIGNAL(_SIGALRM, handler)


def _raw_signal() -> tuple[Callable[[int, Any], Any], Any]:
    """The C function `signal.signal` wraps (CPython's ``_signal``, which has no
    type stubs) and its SIG_DFL; `signal.signal` itself where there is none."""
    try:
        raw = importlib.import_module("_signal")
        return raw.signal, raw.SIG_DFL
    except (ImportError, AttributeError):
        return signal.signal, signal.SIG_DFL


_SIGALRM = int(signal.SIGALRM)
_RAW_SIGNAL, _RAW_DEFAULT = _raw_signal()


__all__ = [
    "BACKSTOP",
    "BACKSTOP_S",
    "HARD_TIMEOUT_EXIT",
    "WATCHDOG",
    "Backstop",
    "CaseTimeout",
    "case_deadline",
    "grace_for",
    "importing",
]
