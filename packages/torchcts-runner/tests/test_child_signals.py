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


# a child that cannot answer: SIGINT ignored (as a handler that never runs), no ack
DEAF = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
DEAF += "time.sleep(2); raise SystemExit(7)"


def _interrupt_deaf_child(tmp_path: object, began: bool) -> tuple[int, ChildSignals]:
    ack = tmp_path / "ack"  # type: ignore[operator]
    with ChildSignals(ack, grace_s=0.3, began=lambda: began) as signals:
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        code = signals.call([sys.executable, "-c", DEAF])
        timer.join()
    return code, signals


def test_a_begun_child_that_never_answers_a_signal_is_killed(tmp_path: object) -> None:
    """Its session began (a session of the same run can finish it) and the grace
    passed without an acknowledgement: killed and said to be stuck."""
    code, signals = _interrupt_deaf_child(tmp_path, began=True)
    assert code == -signal.SIGKILL and signals.stuck
    assert signals.received == [signal.SIGINT]


def test_a_child_still_starting_is_never_killed(tmp_path: object) -> None:
    """Before its session began (its results dir may still hold an earlier run) a
    child is waited for, however long it takes to end."""
    code, signals = _interrupt_deaf_child(tmp_path, began=False)
    assert code == 7 and not signals.stuck


def test_no_child_starts_after_a_signal_and_none_inherits_the_pending_one(
    tmp_path: object, monkeypatch: object
) -> None:
    """A signal noted between two children starts no further one; a child never
    takes the finishing session's variable from the caller's environment (it would
    end every run before its first case)."""
    from torchcts_runner.interrupts import PENDING_ENV

    monkeypatch.setenv(PENDING_ENV, "2")  # type: ignore[attr-defined]
    show = f"import os, sys; sys.exit(7 if os.environ.get({PENDING_ENV!r}) else 0)"
    with ChildSignals() as signals:
        assert signals.call([sys.executable, "-c", show]) == 0
        os.kill(os.getpid(), signal.SIGINT)
        assert signals.call([sys.executable, "-c", "raise SystemExit(9)"]) == (
            -signal.SIGINT
        )
