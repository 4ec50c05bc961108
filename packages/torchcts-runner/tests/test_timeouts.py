"""The in-process deadline guard: one watchdog thread serves a stream of cases,
re-armed by a timestamp, notified only for an earlier deadline."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from torchcts_runner import timeouts
from torchcts_runner.timeouts import Watchdog, case_deadline


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
