"""SIGINT and SIGTERM while ``torchcts-run`` waits on its pytest children.

The children are in the CLI's process group, so a Ctrl-C reaches them directly; a
SIGTERM (sent to the CLI alone) is passed on to the child running. Both are noted for
the whole time the CLI runs children, the moments between two children included (a
run that died in process is continued on workers by a second child): a signal noted
at any point means no further child starts, and none is lost to a default handler
raising KeyboardInterrupt in the CLI between two children.
"""

from __future__ import annotations

import signal
import subprocess
from types import FrameType, TracebackType
from typing import Any


class ChildSignals:
    """Install on entry, restore on exit; `call` runs one child to its end."""

    def __init__(self) -> None:
        self.received: list[int] = []  # signal numbers, in the order they came
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
        proc = self._proc
        if signum == signal.SIGTERM and proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # a SIGINT reached the group already

    def call(self, command: list[str], *, stdout: int | None = None) -> int:
        """Run `command` and return its exit status (negative: killed by a signal)."""
        self._proc = subprocess.Popen(command, stdout=stdout)
        while True:
            try:
                return self._proc.wait()
            except InterruptedError:  # pragma: no cover - PEP 475 retries for us
                continue


__all__ = ["ChildSignals"]
