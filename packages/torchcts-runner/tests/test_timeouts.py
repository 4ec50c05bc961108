"""The in-process deadline guard: one watchdog thread serves a stream of cases,
re-armed by a timestamp, notified only for an earlier deadline."""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from torchcts_runner import timeouts
from torchcts_runner.timeouts import CaseTimeout, Watchdog, case_deadline


def _until_sleeping(watchdog: Watchdog) -> None:
    """Wait until the watchdog thread sleeps in `Condition.wait` (it has read the
    current arming); a case that is disarmed before the thread first looks would
    otherwise leave it asleep for ever and the next arming would wake it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        thread = watchdog._thread
        frame = sys._current_frames().get(thread.ident or 0) if thread else None
        if frame is not None and frame.f_code.co_name == "wait":
            return
        time.sleep(0.001)
    raise AssertionError("the watchdog thread never went to sleep")


def test_a_stream_of_cases_needs_one_thread_and_no_notify(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """200 quick cases after the first: no notification, one watchdog thread."""
    watchdog = Watchdog()
    monkeypatch.setattr(timeouts, "WATCHDOG", watchdog)
    with case_deadline(60.0, lambda: None):
        _until_sleeping(watchdog)  # it has read this deadline, as in a real case
    notified: list[int] = []
    original = watchdog._cond.notify
    monkeypatch.setattr(
        watchdog._cond, "notify", lambda n=1: (notified.append(n), original(n))
    )
    for _ in range(200):
        with case_deadline(60.0, lambda: None):
            pass
    assert notified == []
    assert watchdog._thread is not None and watchdog._thread.is_alive()


def test_an_earlier_deadline_wakes_the_watchdog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A shorter limit than the one the thread sleeps for notifies it once."""
    watchdog = Watchdog()
    monkeypatch.setattr(timeouts, "WATCHDOG", watchdog)
    watchdog.arm(100.0, lambda: None)
    watchdog.disarm()
    notified = threading.Event()
    original = watchdog._cond.notify
    monkeypatch.setattr(
        watchdog._cond, "notify", lambda n=1: (notified.set(), original(n))
    )
    watchdog.arm(1.0, lambda: None)
    watchdog.disarm()
    assert notified.is_set()


class _Clock:
    """A monotonic clock the test moves, and a record of faulthandler's armings."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 100.0
        self.armed: list[float] = []
        self.cancels = 0
        monkeypatch.setattr(timeouts.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(
            timeouts.faulthandler,
            "dump_traceback_later",
            lambda seconds, **_: self.armed.append(seconds),
        )

        def cancel() -> None:
            self.cancels += 1

        monkeypatch.setattr(
            timeouts.faulthandler, "cancel_dump_traceback_later", cancel
        )


def test_the_backstop_is_armed_once_for_many_cases_never_early_never_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream of 10 s cases arms faulthandler about once per 10 s of wall time; it
    always fires between the need and twice the need after any case's start."""
    clock = _Clock(monkeypatch)
    backstop = timeouts.Backstop()
    handle = sys.stderr
    fires_at, armings = 0.0, 0
    for _ in range(100):  # 100 cases of 0.5 s each
        backstop.cover(10.0, handle)
        if len(clock.armed) > armings:  # armed now: it fires that long from now
            armings = len(clock.armed)
            fires_at = clock.now + clock.armed[-1]
        assert clock.now + 10.0 <= fires_at <= clock.now + 20.0
        clock.now += 0.5
    assert 4 <= len(clock.armed) <= 6  # 50 s of cases, one arming per ~10 s
    assert clock.cancels == 0


def test_a_long_warm_up_allowance_does_not_leave_the_next_case_far_away(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a first stage that needed 130 s, a 7 s stage re-arms: a GIL hang in it
    ends within 14 s, not minutes later."""
    clock = _Clock(monkeypatch)
    backstop = timeouts.Backstop()
    backstop.cover(130.0, sys.stderr)
    backstop.cover(7.0, sys.stderr)
    assert clock.armed == [260.0, 14.0]


def test_forget_and_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """After pytest's faulthandler plugin cancelled the dump (forget), the next case
    arms again; release cancels an armed dump once and nothing when none is armed."""
    clock = _Clock(monkeypatch)
    backstop = timeouts.Backstop()
    backstop.cover(7.0, sys.stderr)
    backstop.cover(7.0, sys.stderr)
    assert len(clock.armed) == 1
    backstop.forget()
    backstop.cover(7.0, sys.stderr)
    assert len(clock.armed) == 2
    backstop.release()
    backstop.release()
    assert clock.cancels == 1


def test_a_limit_reached_inside_an_import_waits_for_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A case whose limit passes while it imports a module (a first call importing
    seconds of PyTorch) times out once the import is done: raised inside, the
    exception would leave the module half initialised for every later case."""
    (tmp_path / "slow_to_import.py").write_text(
        "import time\n"
        "end = time.monotonic() + 0.6\n"
        "while time.monotonic() < end:\n"
        "    pass\n"
        "COMPLETE = True\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_to_import", raising=False)
    began = time.monotonic()
    with pytest.raises(timeouts.CaseTimeout), case_deadline(0.2, lambda: None):
        import slow_to_import  # noqa: F401

        while True:  # the case goes on after the import, past its limit
            pass
    assert sys.modules["slow_to_import"].COMPLETE
    assert 0.6 <= time.monotonic() - began < 5.0
    monkeypatch.delitem(sys.modules, "slow_to_import")


def test_importing_tells_an_import_from_the_scripts_own_top_level() -> None:
    """Only the import system's frames count: this test runs under pytest's
    `<module>` frames, which are not an import."""
    assert not timeouts.importing(sys._getframe())
    assert not timeouts.importing(None)


@pytest.mark.parametrize("kind", ["python", "ignore", "default"])
def test_the_alarm_handler_before_a_case_is_back_after_it(kind: str) -> None:
    """Whatever held SIGALRM before a case holds it after (a plugin's handler,
    SIG_IGN, SIG_DFL), as `signal.getsignal` reports it."""

    def theirs(signum: int, frame: object) -> None:
        return None

    handler: Any = {
        "python": theirs,
        "ignore": signal.SIG_IGN,
        "default": signal.SIG_DFL,
    }[kind]
    saved = signal.signal(signal.SIGALRM, handler)
    try:
        with case_deadline(30, lambda: None):
            assert signal.getsignal(signal.SIGALRM) not in (handler, saved)
        assert signal.getsignal(signal.SIGALRM) == handler
    finally:
        signal.signal(signal.SIGALRM, saved)


def test_the_limit_still_raises_in_python_code() -> None:
    """The handler installed per case is the one that fires."""
    with pytest.raises(CaseTimeout), case_deadline(0.05, lambda: None):
        while True:
            pass
