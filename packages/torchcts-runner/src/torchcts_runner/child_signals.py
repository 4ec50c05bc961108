"""SIGINT and SIGTERM while ``torchcts-run`` waits on its pytest children.

The children are in the CLI's process group, so a Ctrl-C reaches them directly; a
SIGTERM (sent to the CLI alone) is passed on to the child running. Both are noted for
the whole time the CLI runs children, the moments between two children included (a
run that died in process is continued on workers by a second child): a signal noted
at any point means no further child starts, and none is lost to a default handler
raising KeyboardInterrupt in the CLI between two children.

A child whose session has begun (`began`: its journal is open, so a session of
the same run can finish it) and that has not acknowledged the signal
(`interrupts.ACK_ENV`) within `grace_s` is stuck where its handler cannot run
(native code holding the interpreter) and is killed (`stuck`): waiting for it would
mean waiting for the case's own time limit, and then it would end as if nobody had
interrupted it. A child still starting up is never killed: pytest ends it on the
signal's KeyboardInterrupt, and its results dir may still hold an earlier run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from torchcts_runner.interrupts import ACK_ENV, PENDING_ENV

GRACE_S = 5.0  # a run answers a signal at its next bytecode; 5 s is a stuck one
GRACE_ENV = "TORCHCTS_INTERRUPT_GRACE_S"  # tests shorten it
POLL_S = 0.25


def grace_seconds() -> float:
    """`GRACE_S`, or the environment's positive override."""
    try:
        value = float(os.environ.get(GRACE_ENV, GRACE_S))
    except ValueError:
        return GRACE_S
    return value if value > 0 else GRACE_S


class ChildSignals:
    """Install on entry, restore on exit; `call` runs one child to its end."""

    def __init__(
        self,
        ack: Path | None = None,
        grace_s: float = GRACE_S,
        began: Callable[[], bool] = lambda: False,
    ) -> None:
        self.received: list[int] = []  # signal numbers, in the order they came
        self.stuck = False  # the last child did not answer a signal and was killed
        self._ack = ack
        self.grace_s = grace_s
        self._began = began
        self._first_at: float | None = None
        self._proc: subprocess.Popen[Any] | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> ChildSignals:
        for number in (signal.SIGINT, signal.SIGTERM):
            self._previous[number] = signal.signal(number, self._note)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        if self._first_at is None:
            self._first_at = time.monotonic()
        proc = self._proc
        if signum == signal.SIGTERM and proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # a SIGINT reached the group already

    def call(
        self,
        command: list[str],
        *,
        stdout: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> int:
        """Run `command` and return its exit status (negative: killed by a signal);
        a child stuck after a signal is killed (`stuck`). `env` is given only to the
        session that finishes a stuck run; any other child, once a signal came, is
        not started (the signal's negative number is returned), and never inherits
        the finishing session's variable from the caller's environment."""
        self.stuck = False
        if env is None and self.received:
            return -self.received[0]  # noted between two children: none starts
        self._first_at = None  # a signal before this child is the caller's to handle
        environment = dict(os.environ if env is None else env)
        if env is None:
            environment.pop(PENDING_ENV, None)
        if self._ack is not None:
            self._ack.unlink(missing_ok=True)
            environment[ACK_ENV] = str(self._ack)
        self._proc = subprocess.Popen(command, stdout=stdout, env=environment)
        while True:
            try:
                return self._proc.wait(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                if self._unanswered():
                    self.stuck = True
                    self._proc.kill()

    def _unanswered(self) -> bool:
        """A signal came more than the grace ago and the child never said so."""
        if self._first_at is None or self._ack is None or self._ack.exists():
            return False
        late = time.monotonic() - self._first_at > self.grace_s
        return late and self._began()


__all__ = ["ChildSignals"]
