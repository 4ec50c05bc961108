"""The in-process deadline guard: one watchdog thread and one faulthandler arming serve
a stream of cases, and an idle process leaves no backstop armed."""

from __future__ import annotations

import io
import threading
import time
from typing import Any

import pytest
from torchcts_runner import timeouts
from torchcts_runner.timeouts import Watchdog, case_deadline


class FakeFaulthandler:
    """Counts what the guard asks of faulthandler, starting no C thread."""

    def __init__(self) -> None:
        self.armed: list[float] = []
        self.cancels = 0

    def dump_traceback_later(self, timeout: float, **kw: Any) -> None:
        self.armed.append(timeout)

    def cancel_dump_traceback_later(self) -> None:
        self.cancels += 1


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeFaulthandler:
    """A fresh watchdog whose backstop is the counting fake."""
    counted = FakeFaulthandler()
    monkeypatch.setattr(timeouts, "faulthandler", counted)
    monkeypatch.setattr(timeouts, "WATCHDOG", Watchdog())
    return counted


def _guard(limit_s: float, backstop: io.StringIO) -> None:
    with case_deadline(limit_s, lambda: None, backstop):
        pass


def test_a_stream_of_cases_arms_faulthandler_once_and_notifies_never(
    fake: FakeFaulthandler,
) -> None:
    """200 quick cases: one backstop arming, no cancel, no notify after the first."""
    backstop = io.StringIO()
    _guard(60.0, backstop)
    notified: list[int] = []
    condition = timeouts.WATCHDOG._cond
    original = condition.notify
    condition.notify = lambda n=1: (notified.append(n), original(n))  # type: ignore[assignment,func-returns-value]
    for _ in range(200):
        _guard(60.0, backstop)
    assert (len(fake.armed), fake.cancels, notified) == (1, 0, [])
    names = [t.name for t in threading.enumerate() if t.name == "torchcts-watchdog"]
    assert len(names) >= 1


def test_a_shorter_limit_moves_the_backstop_earlier(fake: FakeFaulthandler) -> None:
    """After a 100 s case, a 1 s case gets a backstop due within its own window."""
    backstop = io.StringIO()
    _guard(100.0, backstop)
    _guard(1.0, backstop)
    hard = 1.0 + timeouts.grace_for(1.0)
    window = hard + timeouts.BACKSTOP_S + timeouts.backstop_slack(hard)
    assert len(fake.armed) == 2
    assert hard + timeouts.BACKSTOP_S <= fake.armed[-1] <= window


def test_a_backstop_due_soon_is_cancelled_when_the_case_returns(
    fake: FakeFaulthandler,
) -> None:
    """A guard whose backstop is due within IDLE_GUARD_S cancels it on leaving."""
    _guard(0.2, io.StringIO())
    assert (len(fake.armed), fake.cancels) == (1, 1)


def test_an_idle_process_stands_the_backstop_down(
    fake: FakeFaulthandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no case armed, the watchdog thread cancels the backstop before it is due."""
    monkeypatch.setattr(timeouts, "IDLE_GUARD_S", 35.0)
    _guard(20.0, io.StringIO())  # backstop ~37.5 s out: left armed on leaving
    assert fake.cancels == 0
    waited = 0.0
    while fake.cancels == 0 and waited < 20:
        time.sleep(0.05)
        waited += 0.05
    assert fake.cancels == 1
    assert timeouts.WATCHDOG._backstop_at is None
