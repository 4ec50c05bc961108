"""One fresh child per case: every way a case can end is reported as what it was."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from torchcts_isolate import IsolatedOutcome, run_isolated
from torchcts_isolate.worker import Child
from torchcts_schema import CrashKind


def run(
    name: str,
    env: dict[str, str],
    payload: dict[str, object] | None = None,
    **limits: float,
) -> IsolatedOutcome:
    """Run an entry of isolate_entries with short limits."""
    return run_isolated(
        f"isolate_entries:{name}",
        payload or {},
        timeout_s=limits.get("timeout_s", 20.0),
        heartbeat_s=limits.get("heartbeat_s", 10.0),
        memory_mb=int(limits["memory_mb"]) if "memory_mb" in limits else None,
        env=env,
    )


def test_normal_return_carries_result_and_tails(entry_env: dict[str, str]) -> None:
    """A returning entry gives its JSON result, both stream tails and no crash."""
    outcome = run("echo", entry_env, {"tag": "t1", "x": [1.5, None]})
    assert outcome.result is not None
    assert outcome.result["echo"] == {"tag": "t1", "x": [1.5, None]}
    assert outcome.stdout_tail == "out:t1\n"
    assert outcome.stderr_tail == "err:t1\n"
    assert outcome.crash_info() is None
    assert (outcome.signal, outcome.timed_out, outcome.hung) == (None, False, False)


def test_exception_is_reported_not_hidden(entry_env: dict[str, str]) -> None:
    """An entry that raises gives no result, the exception text and its traceback."""
    outcome = run("raises", entry_env, {"tag": 7})
    assert outcome.result is None
    assert outcome.exception == "ValueError: boom 7"
    assert outcome.traceback is not None and "raises" in outcome.traceback
    crash = outcome.crash_info()
    assert crash is not None and crash.kind is CrashKind.SUBPROCESS
    assert "ValueError" in crash.detail


@pytest.mark.parametrize(
    ("name", "signal", "fault_text"),
    [("segfault", "SIGSEGV", "Segmentation fault"), ("abort", "SIGABRT", "Aborted")],
)
def test_fatal_signals_are_named(
    entry_env: dict[str, str], name: str, signal: str, fault_text: str
) -> None:
    """A child killed by a signal reports its name and the faulthandler traceback."""
    outcome = run(name, entry_env)
    assert outcome.result is None and outcome.signal == signal
    assert outcome.traceback is not None and fault_text in outcome.traceback
    assert f"in {name}" in outcome.traceback
    crash = outcome.crash_info()
    assert crash is not None
    assert (crash.kind, crash.signal) == (CrashKind.SIGNAL, signal)


def test_native_hang_holding_gil_is_a_hang(entry_env: dict[str, str]) -> None:
    """A C call holding the GIL stops the heartbeat: hung, with every thread's stack."""
    outcome = run("native_hang", entry_env, heartbeat_s=1.0, timeout_s=30.0)
    assert outcome.hung and not outcome.timed_out
    assert outcome.duration_s < 25
    assert outcome.traceback is not None and "in native_hang" in outcome.traceback
    crash = outcome.crash_info()
    assert crash is not None and crash.kind is CrashKind.HANG


def test_gil_released_sleep_keeps_heartbeat(entry_env: dict[str, str]) -> None:
    """A slow case that releases the GIL keeps beating, so it times out, not hangs."""
    outcome = run(
        "released_sleep", entry_env, {"seconds": 30}, heartbeat_s=0.5, timeout_s=2.0
    )
    assert outcome.timed_out and not outcome.hung
    crash = outcome.crash_info()
    assert crash is not None and crash.kind is CrashKind.TIMEOUT
    assert "2s" in crash.detail


def test_slow_case_within_limits_passes(entry_env: dict[str, str]) -> None:
    """A case slower than the heartbeat limit but inside the timeout still returns."""
    outcome = run(
        "released_sleep", entry_env, {"seconds": 1.2}, heartbeat_s=0.5, timeout_s=10
    )
    assert outcome.result == {"slept": True}


def test_memory_blow_up_is_memory_exceeded(entry_env: dict[str, str]) -> None:
    """Allocating past the memory limit is reported as memory_exceeded."""
    outcome = run("blow_memory", entry_env, memory_mb=256)
    assert outcome.result is None and outcome.memory_exceeded
    crash = outcome.crash_info()
    assert crash is not None and "memory limit of 256 MB" in crash.detail


def test_os_exit_mid_case_gives_exit_code(entry_env: dict[str, str]) -> None:
    """os._exit during a case is a subprocess crash with that exit code."""
    outcome = run("exit_mid_case", entry_env, {"code": 5})
    assert outcome.result is None and outcome.exit_code == 5
    assert outcome.stdout_tail == "about to exit\n"
    crash = outcome.crash_info()
    assert crash is not None
    assert (crash.kind, crash.exit_code) == (CrashKind.SUBPROCESS, 5)


@pytest.mark.parametrize("then", ["return", "segfault", "fork_and_segfault"])
def test_grandchildren_are_cleaned_up(
    entry_env: dict[str, str],
    tmp_path: Path,
    gone: Callable[[int], bool],
    then: str,
) -> None:
    """Processes a case starts never outlive it, even when they hold its pipes."""
    pid_file = tmp_path / "pid"
    outcome = run("grandchild", entry_env, {"pid_file": str(pid_file), "then": then})
    assert (outcome.result is not None) == (then == "return")
    assert outcome.duration_s < 15
    assert gone(int(pid_file.read_text()))


def test_non_dict_result_is_an_error(entry_env: dict[str, str]) -> None:
    """An entry must return a JSON object; anything else is reported, not coerced."""
    outcome = run("not_a_dict", entry_env)
    assert outcome.result is None
    assert outcome.exception is not None and "not a dict" in outcome.exception


def test_missing_entry_fails_at_startup(entry_env: dict[str, str]) -> None:
    """An entry that cannot be imported is reported with the import error."""
    outcome = run_isolated(
        "no_such_module_xyz:f", {}, timeout_s=5, heartbeat_s=None, memory_mb=None
    )
    assert outcome.result is None
    assert outcome.exception is not None
    assert "ModuleNotFoundError" in outcome.exception
    assert "while starting the child" in outcome.detail


def test_crash_while_importing_entry_is_named(entry_env: dict[str, str]) -> None:
    """A child killed by a signal while importing (a backend's import) says so."""
    env = {**entry_env, "ISOLATE_ENTRIES_CRASH_ON_IMPORT": "1"}
    outcome = run("echo", env)
    assert outcome.result is None and outcome.signal == "SIGSEGV"
    assert "while starting the child" in outcome.detail


@pytest.fixture
def late_parent(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """``late_parent(s)``: the parent loses the CPU for `s` seconds right after its
    first read of a running payload's pipe, as on a loaded machine."""

    def install(seconds: float) -> None:
        real = Child._receive
        slept: list[bool] = []

        def receive(self: Child, timeout_s: float) -> list[dict[str, Any]] | None:
            messages = real(self, timeout_s)
            if self.handed_last and not slept:
                slept.append(True)
                time.sleep(seconds)
            return messages

        monkeypatch.setattr(Child, "_receive", receive)

    return install


def test_a_late_parent_reads_the_result_before_judging(
    entry_env: dict[str, str], late_parent: Callable[[float], None]
) -> None:
    """A parent kept off the CPU past both limits while the child beat and returned
    takes the result waiting in the pipe: the case is neither hung nor timed out."""
    late_parent(1.5)
    outcome = run(
        "released_sleep", entry_env, {"seconds": 0.2}, heartbeat_s=0.5, timeout_s=1.0
    )
    assert (outcome.hung, outcome.timed_out) == (False, False), outcome.detail
    assert outcome.result == {"slept": True}


def test_a_late_parent_reads_a_result_longer_than_one_read(
    entry_env: dict[str, str], late_parent: Callable[[float], None]
) -> None:
    """A result over 64 KiB (one read of the pipe) waiting when the late parent
    looks is read whole before anything is judged: not called hung."""
    late_parent(1.5)
    outcome = run(
        "large_result", entry_env, {"size": 300_000}, heartbeat_s=0.5, timeout_s=1.0
    )
    assert (outcome.hung, outcome.timed_out) == (False, False), outcome.detail
    assert outcome.result == {"text": "x" * 300_000}


def test_a_late_parent_still_tells_a_hang_from_a_timeout(
    entry_env: dict[str, str], late_parent: Callable[[float], None]
) -> None:
    """Beats that stopped before the limit make a hang however late the parent looks:
    it judges by when the child last beat (0.3 s in), not by when it read the beats
    (2 s in, which would leave them silent for less than 0.5 s at the 2.2 s limit)."""
    late_parent(2.0)
    outcome = run(
        "beat_then_hang", entry_env, {"seconds": 0.3}, heartbeat_s=0.5, timeout_s=2.2
    )
    assert outcome.hung and not outcome.timed_out, outcome.detail
    assert outcome.traceback is not None and "in native_hang" in outcome.traceback
