"""The warm pool: children reused while healthy, replaced when lost, never leaked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from torchcts_isolate import WarmPool


def test_healthy_child_is_reused(entry_env: dict[str, str]) -> None:
    """Successive cases run in the same warm child."""
    with WarmPool("isolate_entries:echo", env=entry_env) as pool:
        first = pool.run({"tag": 1}, timeout_s=20, heartbeat_s=10)
        second = pool.run({"tag": 2}, timeout_s=20, heartbeat_s=10)
    assert first.result is not None and second.result is not None
    assert first.result["pid"] == second.result["pid"]
    assert (first.stdout_tail, second.stdout_tail) == ("out:1\n", "out:2\n")


def test_memory_cap_on_the_whole_payload_or_where_the_entry_puts_it(
    entry_env: dict[str, str],
) -> None:
    """By default ``memory_mb`` caps the whole payload, so holding 384 MiB under a
    256 MiB cap runs out; with ``entry_caps_memory`` only the part the entry wraps in
    `memory_limit` is capped (the 384 MiB are held, the 512 MiB inside fail), and the
    number still explains a child that died out of memory."""
    with WarmPool("isolate_entries:capped_part", env=entry_env, memory_mb=256) as pool:
        whole = pool.run({"memory_mb": 256}, timeout_s=20, heartbeat_s=10)
    assert whole.result is None and whole.memory_exceeded
    with WarmPool(
        "isolate_entries:capped_part",
        env=entry_env,
        memory_mb=256,
        entry_caps_memory=True,
    ) as pool:
        part = pool.run({"memory_mb": 256}, timeout_s=20, heartbeat_s=10)
    assert part.result is not None
    assert (part.result["held_mb"], part.result["inside"]) == (384, "MemoryError")
    with WarmPool(
        "isolate_entries:bad_alloc_abort",
        env=entry_env,
        memory_mb=256,
        entry_caps_memory=True,
    ) as pool:
        died = pool.run({}, timeout_s=20, heartbeat_s=10)
    assert died.signal == "SIGABRT" and died.memory_exceeded
    crash = died.crash_info()
    assert crash is not None and "memory limit of 256 MB" in crash.detail


def test_crashed_child_is_replaced(
    entry_env: dict[str, str], gone: Callable[[int], bool]
) -> None:
    """After a segfault the pool holds a new child and the next case runs there."""
    with WarmPool("isolate_entries:segfault", env=entry_env, size=2) as pool:
        before = pool.pids()
        outcome = pool.run({}, timeout_s=20, heartbeat_s=10)
        after = pool.pids()
        assert outcome.signal == "SIGSEGV"
        assert len(after) == 2 and pool.replaced == 1
        assert len(set(after) - set(before)) == 1
        assert gone(next(iter(set(before) - set(after))))
        again = pool.run({}, timeout_s=20, heartbeat_s=10)
        assert again.signal == "SIGSEGV" and pool.replaced == 2


def test_spare_comes_with_the_first_loss(
    entry_env: dict[str, str], gone: Callable[[int], bool]
) -> None:
    """spares_after_loss=1: one child while none is lost, two from the first loss on
    (the spare takes the next case), and no third after later losses."""
    with WarmPool("isolate_entries:echo", env=entry_env, spares_after_loss=1) as pool:
        first = pool.run({}, timeout_s=20, heartbeat_s=10).result
        assert first is not None and len(pool.pids()) == 1
        os.kill(first["pid"], signal.SIGKILL)  # lost while idle
        assert gone(first["pid"])
        second = pool.run({}, timeout_s=20, heartbeat_s=10).result
        assert second is not None and second["pid"] != first["pid"]
        assert pool.replaced == 1 and len(pool.pids()) == 2
        spare = next(p for p in pool.pids() if p != second["pid"])
        os.kill(second["pid"], signal.SIGKILL)
        assert gone(second["pid"])
        third = pool.run({}, timeout_s=20, heartbeat_s=10).result
        assert third is not None and third["pid"] == spare  # the spare, warm already
        assert pool.replaced == 2 and len(pool.pids()) == 2


def test_no_spare_is_started_when_no_payload_is_expected(
    entry_env: dict[str, str], gone: Callable[[int], bool]
) -> None:
    """more=False (the caller's last payload): a loss brings its replacement but not
    the spare; the first payload that expects more brings the spare then."""
    with WarmPool("isolate_entries:echo", env=entry_env, spares_after_loss=1) as pool:
        first = pool.run({}, timeout_s=20, heartbeat_s=10, more=False).result
        assert first is not None and len(pool.pids()) == 1
        os.kill(first["pid"], signal.SIGKILL)
        assert gone(first["pid"])
        last = pool.run({}, timeout_s=20, heartbeat_s=10, more=False).result
        assert last is not None and last["pid"] != first["pid"]
        assert pool.replaced == 1 and pool.pids() == [last["pid"]]
        again = pool.run({}, timeout_s=20, heartbeat_s=10).result
        assert again is not None and again["pid"] == last["pid"]
        assert len(pool.pids()) == 2  # the spare, from the first loss on


def test_hung_child_is_replaced_and_next_case_runs(entry_env: dict[str, str]) -> None:
    """A hang in one case does not poison the next one."""
    with WarmPool("isolate_entries:native_hang", env=entry_env) as pool:
        hung = pool.run({"seconds": 60}, timeout_s=30, heartbeat_s=1)
        assert hung.hung and pool.replaced == 1
        quick = pool.run({"seconds": 0}, timeout_s=30, heartbeat_s=1)
        assert quick.result == {}


def test_recycle_after_retires_healthy_children(entry_env: dict[str, str]) -> None:
    """recycle_after=N starts a new child after N cases without counting a loss."""
    with WarmPool("isolate_entries:echo", env=entry_env, recycle_after=2) as pool:
        results = [pool.run({}, timeout_s=20, heartbeat_s=10).result for _ in range(3)]
        assert pool.replaced == 0
    first, second, third = (r["pid"] if r else None for r in results)
    assert first == second and third not in (first, None)


def test_retire_throws_away_a_child_its_result_spoiled(
    entry_env: dict[str, str],
) -> None:
    """retire(result) true: that child takes no later payload; false: it stays."""
    with WarmPool(
        "isolate_entries:echo",
        env=entry_env,
        retire=lambda result: bool(result["echo"].get("spoil")),
    ) as pool:
        kept = pool.run({}, timeout_s=20, heartbeat_s=10).result
        spoiled = pool.run({"spoil": True}, timeout_s=20, heartbeat_s=10).result
        after = pool.run({}, timeout_s=20, heartbeat_s=10).result
        assert pool.replaced == 1
    assert kept and spoiled and after
    assert kept["pid"] == spoiled["pid"] != after["pid"]


def test_import_failure_is_reported_per_case(entry_env: dict[str, str]) -> None:
    """A child that cannot import the entry yields an honest outcome, not a hang."""
    with WarmPool("isolate_entries:missing_function", env=entry_env) as pool:
        outcome = pool.run({}, timeout_s=20, heartbeat_s=10)
    assert outcome.result is None
    assert outcome.exception is not None and "AttributeError" in outcome.exception


def test_close_leaves_no_children(
    entry_env: dict[str, str], gone: Callable[[int], bool]
) -> None:
    """close() ends and reaps every child; a second close is harmless."""
    pool = WarmPool("isolate_entries:echo", env=entry_env, size=3)
    pids = pool.pids()
    pool.run({}, timeout_s=20, heartbeat_s=10)
    pool.close()
    pool.close()
    assert all(gone(pid) for pid in pids)


def test_children_exit_when_parent_dies(
    entry_env: dict[str, str], tmp_path: Path, gone: Callable[[int], bool]
) -> None:
    """A parent killed without cleanup leaves no children or scratch files behind."""
    script = textwrap.dedent(
        """
        import json, os, sys
        from torchcts_isolate import WarmPool
        pool = WarmPool("isolate_entries:echo", size=2, env=json.loads(sys.argv[1]))
        pool.run({}, timeout_s=20, heartbeat_s=10)
        dirs = [str(c.dir) for c in pool._children]
        print(json.dumps([pool.pids(), dirs]), flush=True)
        os._exit(0)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(entry_env)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    pids, dirs = json.loads(done.stdout)
    assert len(pids) == 2
    assert all(gone(pid) for pid in pids)
    assert not any(Path(d).exists() for d in dirs)  # orphans clean up after the parent


def test_preload_imports_before_first_case(entry_env: dict[str, str]) -> None:
    """Preloaded modules are already imported when the first case arrives."""
    names = ["isolate_preloaded", "isolate_entries"]
    with WarmPool("isolate_entries:loaded", env=entry_env, preload=names[:1]) as pool:
        outcome = pool.run({"names": names}, timeout_s=20, heartbeat_s=10)
    assert outcome.result == {"loaded": names}


def test_failing_preload_is_reported(entry_env: dict[str, str]) -> None:
    """A preload that cannot be imported fails the child's start, visibly."""
    with WarmPool(
        "isolate_entries:echo", env=entry_env, preload=["no_such_backend_xyz"]
    ) as pool:
        outcome = pool.run({}, timeout_s=20, heartbeat_s=10)
    assert outcome.result is None and outcome.exception is not None
    assert "no_such_backend_xyz" in outcome.exception


def test_child_dying_while_idle_is_replaced(entry_env: dict[str, str]) -> None:
    """A warm child killed between cases (say, by the OOM killer) is replaced."""
    with WarmPool("isolate_entries:echo", env=entry_env) as pool:
        first = pool.run({}, timeout_s=20, heartbeat_s=10)
        assert first.result is not None
        os.kill(first.result["pid"], signal.SIGKILL)
        time.sleep(0.2)
        second = pool.run({}, timeout_s=20, heartbeat_s=10)
        assert second.result is not None and second.result["pid"] != first.result["pid"]
        assert pool.replaced == 1


def test_a_death_seen_late_is_not_the_next_payloads(
    entry_env: dict[str, str],
    gone: Callable[[int], bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A child killed while idle can still look alive when the next payload is handed
    to it (its leader a zombie, other threads still exiting): it never began that
    payload, so the payload goes to a fresh child and no case gets its death."""
    with WarmPool("isolate_entries:echo", env=entry_env) as pool:
        first = pool.run({}, timeout_s=20, heartbeat_s=10).result
        assert first is not None
        dead = first["pid"]
        os.kill(dead, signal.SIGKILL)
        assert gone(dead)
        poll = subprocess.Popen.poll
        asked: list[int] = []

        def late(self: subprocess.Popen[bytes]) -> int | None:
            if self.pid == dead and not asked:  # the pool's look before handing over
                asked.append(dead)
                return None
            return poll(self)

        monkeypatch.setattr(subprocess.Popen, "poll", late)
        second = pool.run({"tag": 2}, timeout_s=20, heartbeat_s=10)
        assert asked == [dead]
        assert second.result is not None and second.result["pid"] != dead
        assert second.signal is None and second.stdout_tail == "out:2\n"
        assert pool.replaced == 1 and len(pool.pids()) == 1


def test_warmup_runs_once_before_cases(entry_env: dict[str, str]) -> None:
    """The warm-up function runs in each child before its first case."""
    warm = ("isolate_entries:warm", {"manifest": "m.py"})
    with WarmPool("isolate_entries:warmed", env=entry_env, warmup=warm) as pool:
        outcome = pool.run({}, timeout_s=20, heartbeat_s=10)
    assert outcome.result == {"warmed": {"manifest": "m.py"}}


def test_failing_warmup_is_reported(entry_env: dict[str, str]) -> None:
    """A warm-up that raises is a visible start failure, not a silent cold child."""
    warm = ("isolate_entries:warm", {"fail": True})
    with WarmPool("isolate_entries:warmed", env=entry_env, warmup=warm) as pool:
        outcome = pool.run({}, timeout_s=20, heartbeat_s=10)
    assert outcome.result is None
    assert outcome.exception is not None and "warm-up failed" in outcome.exception
    assert "while starting the child" in outcome.detail


def test_a_closed_child_finishes_what_a_normal_exit_would(
    entry_env: dict[str, str], tmp_path: Path
) -> None:
    """A child leaves without the interpreter's teardown (a second with torch loaded),
    but its atexit handlers run, its non-daemon threads end and stdout is flushed."""
    files = {name: str(tmp_path / name) for name in ("atexit", "thread", "stdout")}
    pool = WarmPool("isolate_entries:leaves_work_for_exit", env=entry_env)
    outcome = pool.run(files, timeout_s=20, heartbeat_s=10)
    assert outcome.result is not None
    pool.close()
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").read_text() == "joined"
    assert (tmp_path / "stdout").read_text() == "buffered, never flushed by the case"
