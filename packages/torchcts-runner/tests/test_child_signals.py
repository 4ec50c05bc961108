"""torchcts-run's signals while it runs pytest children: a Ctrl-C between two
children is noted (so no continuation starts), never a KeyboardInterrupt in the CLI;
a SIGTERM is passed on to the child running."""

from __future__ import annotations

import os
import signal
import sys
import threading

from torchcts_runner.child_signals import ChildSignals


def test_a_signal_between_children_is_noted_not_raised() -> None:
    """Between two children nothing runs: the SIGINT is noted for the loop to see
    (it raised KeyboardInterrupt in the CLI, outside any handler)."""
    before = signal.getsignal(signal.SIGINT)
    with ChildSignals() as signals:
        assert signals.call([sys.executable, "-c", "pass"]) == 0
        os.kill(os.getpid(), signal.SIGINT)  # delivered here, between children
        assert signals.received == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is before


def test_a_sigterm_is_passed_on_to_the_child() -> None:
    """A SIGTERM to the CLI alone reaches its child, which ends by it."""
    with ChildSignals() as signals:
        timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        code = signals.call([sys.executable, "-c", "import time; time.sleep(60)"])
        timer.join()
    assert code == -signal.SIGTERM
    assert signals.received == [signal.SIGTERM]
