"""One run per results directory: the lock refuses a second holder and never goes stale."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from torchcts_schema import RunLock, RunLockedError, live_holder

HOLD = """
import sys, time
from pathlib import Path
from torchcts_schema import RunLock
lock = RunLock(Path(sys.argv[1]))
lock.acquire("torchcts-run --manifest m.py")
print("held", flush=True)
time.sleep(60)
"""


def _holder(results: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(results)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_second_run_is_refused_naming_the_holder(tmp_path: Path) -> None:
    """While another process holds the lock, acquire refuses with its pid and command."""
    proc = _holder(tmp_path)
    try:
        with pytest.raises(RunLockedError) as caught:
            RunLock(tmp_path).acquire("second")
        message = str(caught.value)
        assert f"pid {proc.pid}" in message
        assert "torchcts-run --manifest m.py" in message
        assert "\n" not in message
    finally:
        proc.kill()
        proc.wait()


def test_lock_of_a_killed_holder_is_free_at_once(tmp_path: Path) -> None:
    """kill -9 of the holder frees the lock: no stale lock survives its process."""
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lock = RunLock(tmp_path)
    deadline = time.monotonic() + 5
    while True:
        try:
            lock.acquire("after")
            break
        except RunLockedError:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert lock.held
    lock.release()


def test_release_then_reacquire_and_release_twice(tmp_path: Path) -> None:
    """A released lock can be taken again; release is safe twice and empties the note."""
    first = RunLock(tmp_path)
    first.acquire("one")
    assert str(os.getpid()) in (tmp_path / ".torchcts.lock").read_text()
    first.release()
    first.release()
    assert (tmp_path / ".torchcts.lock").read_text() == ""
    second = RunLock(tmp_path)
    second.acquire("two")
    assert second.held
    second.release()


def test_live_holder_names_the_holder_while_held_and_nothing_after(
    tmp_path: Path,
) -> None:
    """live_holder: None with no lock file (and creates none), the holder's pid and
    command while a process holds the lock, None once it is gone."""
    assert live_holder(tmp_path) is None
    assert not (tmp_path / ".torchcts.lock").exists()
    proc = _holder(tmp_path)
    try:
        holder = live_holder(tmp_path)
        assert holder is not None
        assert f"pid {proc.pid}" in holder
        assert "command: torchcts-run --manifest m.py" in holder
        # the probe leaves the lock to its holder: a run still cannot take it
        with pytest.raises(RunLockedError):
            RunLock(tmp_path).acquire("second")
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 5
    while live_holder(tmp_path) is not None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # and the probe did not keep it either
    lock = RunLock(tmp_path)
    lock.acquire("after")
    lock.release()


def test_a_live_holder_probe_does_not_refuse_a_starting_run(tmp_path: Path) -> None:
    """`live_holder` (archive's check) takes the lock shared for an instant: a run
    starting then finds it taken with no holder note and asks again, instead of
    refusing with "holder unknown"."""
    import fcntl
    import threading

    (tmp_path / ".torchcts.lock").write_text("")
    probe = os.open(tmp_path / ".torchcts.lock", os.O_RDONLY)
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
    letting_go = threading.Timer(0.05, lambda: fcntl.flock(probe, fcntl.LOCK_UN))
    letting_go.start()
    lock = RunLock(tmp_path)
    try:
        lock.acquire("starting")
        assert lock.held
    finally:
        letting_go.join()
        lock.release()
        os.close(probe)
