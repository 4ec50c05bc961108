"""SIGINT and SIGTERM: a user's interrupt is not a case result.

The controller turns either signal into pytest's own interruption (a
``KeyboardInterrupt`` in the main thread), after noting which signal it was, so the
session ends through its normal finish: a partial snapshot and report that name the
cases in flight, and an exit status of 128 + the signal number. xdist workers ignore
both signals: the controller ends them, and a worker whose controller is gone exits on
its own (`ParentWatch`). A ``KeyboardInterrupt`` or ``SystemExit`` that a *kernel*
raises while no signal arrived is an exception of the case like any other.

A process stuck in native code that holds the interpreter (a driver's deadlock)
cannot run its handler at all. ``torchcts-run`` tells the two apart by the handler's
acknowledgement (`ACK_ENV`): a run that does not answer within a few seconds is
killed, and a short session of the same run (``--resume`` with `PENDING_ENV`)
writes the partial snapshot and report the stuck one could not, naming the cases
that were in flight, so the user's Ctrl-C ends the same way whatever a case was
doing when it came.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

_received: list[int] = []  # signals received by this process, in order
ACK_ENV = "TORCHCTS_INTERRUPT_ACK"  # a file the handler creates: "I am handling it"
PENDING_ENV = "TORCHCTS_INTERRUPTED_BY"  # the signal that ended a stuck attempt


def interrupted_by() -> int | None:
    """The first SIGINT/SIGTERM this process received, if any."""
    return _received[0] if _received else None


def pending_interrupt() -> int | None:
    """The signal a stuck attempt of this run received (``torchcts-run`` killed it
    and started this session to finish the run as interrupted), if any."""
    text = os.environ.get(PENDING_ENV, "")
    if text.isdigit() and int(text) in (signal.SIGINT, signal.SIGTERM):
        return int(text)
    return None


def _acknowledge() -> None:
    """Tell `torchcts-run` this process is handling the signal (best effort)."""
    path = os.environ.get(ACK_ENV)
    if path:
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


def user_interrupted() -> bool:
    """Has a real SIGINT/SIGTERM arrived (as opposed to a kernel raising one)?"""
    return bool(_received)


class RunInterrupted(KeyboardInterrupt):
    """A user's SIGINT or SIGTERM (pytest ends the session as interrupted)."""


def _interruption(signum: int) -> RunInterrupted:
    # not "KeyboardInterrupt" by name: pytest then prints one line, no location dump
    return RunInterrupted(f"run interrupted by {signal.Signals(signum).name}")


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise _interruption(signum)


def install_interrupt_handlers(on_signal: Callable[[int], None] | None = None) -> None:
    """In the process that owns the run: both signals interrupt the session."""
    if threading.current_thread() is not threading.main_thread():
        return
    pending = pending_interrupt()
    if pending is not None and not _received:
        _received.append(pending)  # this session only finishes the interrupted run

    def handler(signum: int, frame: FrameType | None) -> None:
        _acknowledge()
        if on_signal is not None:
            on_signal(signum)
        _raise_interrupt(signum, frame)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def raise_if_interrupted() -> None:
    """A SIGINT or SIGTERM arrived before the run began (the handlers are installed
    when the controller starts, and code that catches KeyboardInterrupt, such as
    xdist's worker set-up, may have swallowed it): end the session now, as
    interrupted, instead of running every case."""
    signum = interrupted_by()
    if signum is not None:
        raise _interruption(signum)


def ignore_interrupts() -> None:
    """In an xdist worker: the controller decides when the worker ends."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def exit_status_for(signum: int | None) -> int | None:
    """128 + the signal number, the shell's convention (130 SIGINT, 143 SIGTERM)."""
    return None if signum is None else 128 + signum


class ParentWatch:
    """Ends this worker within about a second of its controller's death.

    An orphaned xdist worker would otherwise go on starting the cases it was sent,
    writing runlog starts nobody will journal. `on_orphan` runs first (it leaves a
    marker that tells --resume the case in flight was not the case's fault).
    """

    def __init__(self, on_orphan: Callable[[], None], interval_s: float = 0.5) -> None:
        self._parent = os.getppid()
        self._on_orphan = on_orphan
        self._interval = interval_s
        self._thread = threading.Thread(
            target=self._loop, name="torchcts-parent-watch", daemon=True
        )
        self._thread.start()

    def orphaned(self) -> bool:
        """Has the controller gone (this process re-parented)?"""
        return os.getppid() != self._parent

    def _loop(self) -> None:
        while not self.orphaned():
            time.sleep(self._interval)
        try:
            self._on_orphan()
        finally:
            os._exit(0)


__all__ = [
    "ACK_ENV",
    "PENDING_ENV",
    "ParentWatch",
    "RunInterrupted",
    "exit_status_for",
    "ignore_interrupts",
    "install_interrupt_handlers",
    "interrupted_by",
    "pending_interrupt",
    "raise_if_interrupted",
    "user_interrupted",
]
