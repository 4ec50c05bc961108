"""The in-process deadline guard: one watchdog thread serves a stream of cases,
re-armed by a timestamp, notified only for an earlier deadline."""

from __future__ import annotations

import threading

import pytest
from torchcts_runner import timeouts
from torchcts_runner.timeouts import Watchdog, case_deadline


def test_a_stream_of_cases_needs_one_thread_and_no_notify(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """200 quick cases after the first: no notification, one watchdog thread."""
    watchdog = Watchdog()
    monkeypatch.setattr(timeouts, "WATCHDOG", watchdog)
    with case_deadline(60.0, lambda: None):
        pass
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
