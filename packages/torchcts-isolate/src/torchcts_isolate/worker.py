"""The parent's handle on one child interpreter: start it, hand it a case, watch it.

The watchdog lives here. It waits on the child's result pipe and ends the case when the
entry returns, the child dies, the per-case limit passes (``timed_out``) or heartbeats
stop for ``heartbeat_s`` (``hung``). Before killing a stuck child it sends SIGUSR1 so
faulthandler dumps every thread's stack; then the whole process group is killed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torchcts_isolate import child as _child_module
from torchcts_isolate.ending import signal_name
from torchcts_isolate.outcome import IsolatedOutcome, describe
from torchcts_isolate.procs import file_size, kill_group, read_from

STARTUP_TIMEOUT_S = 600.0
BEAT_INTERVAL_S = 0.1
_CHILD_FILE = _child_module.__file__
_MEMORY_WORDS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory")


class Child:
    """One child interpreter that has (or is) importing ``entry``'s module."""

    def __init__(
        self,
        entry: str,
        *,
        env: dict[str, str] | None = None,
        beat_interval_s: float = BEAT_INTERVAL_S,
        preload: Sequence[str] = (),
        warmup: tuple[str, dict[str, Any]] | None = None,
    ) -> None:
        self.entry = entry
        self.beat_interval_s = beat_interval_s
        self.dir = Path(tempfile.mkdtemp(prefix=_child_module.SCRATCH_PREFIX))
        self.out_path = self.dir / "stdout.txt"
        self.err_path = self.dir / "stderr.txt"
        self.fault_path = self.dir / "faulthandler.txt"
        self.ready = False
        self.cases = 0
        # whether the last payload was handed to a ready child, and whether the child
        # said it began it ("start"): one that died between the two died of something
        # else than that payload
        self.handed_last = False
        self.began_last = False
        self._buffer = b""
        self._number = 0
        read_fd, write_fd = os.pipe()
        full_env = {**os.environ, **(env or {})}
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        full_env[_child_module.SYSPATH_ENV] = json.dumps([p for p in sys.path if p])
        if warmup is not None:
            full_env[_child_module.WARMUP_ENV] = json.dumps(
                {"entry": warmup[0], "args": warmup[1]}
            )
        argv = [sys.executable, _CHILD_FILE, entry, str(write_fd)]
        argv += [str(self.fault_path), str(beat_interval_s), *preload]
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                pass_fds=(write_fd,),
                start_new_session=True,
                env=full_env,
            )
        os.close(write_fd)
        self._read_fd = read_fd
        self._selector = selectors.DefaultSelector()
        self._selector.register(read_fd, selectors.EVENT_READ)

    @property
    def pid(self) -> int:
        """The child's pid, which is also its process-group id."""
        return self.proc.pid

    def wait_ready(self, timeout_s: float = STARTUP_TIMEOUT_S) -> dict[str, Any] | None:
        """Block until the child imported the entry; returns the failure message (or a
        synthetic one) when it could not, None when ready."""
        deadline = time.monotonic() + timeout_s
        while not self.ready:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                return {"t": "startup_timeout"}
            messages = self._receive(remaining)
            if messages is None:
                return {"t": "died"}
            for message in messages:
                if message["t"] == "ready":
                    self.ready = True
                elif message["t"] == "raised":
                    return message
        return None

    def run(
        self,
        payload: dict[str, Any],
        *,
        timeout_s: float,
        heartbeat_s: float | None,
        memory_mb: int | None,
        entry_caps_memory: bool = False,
    ) -> IsolatedOutcome:
        """Run one payload and say how it ended; the child may be dead afterwards.

        ``memory_mb`` caps the whole payload, unless ``entry_caps_memory`` says the
        entry applies it itself to the part that is the case (`memory_limit`); it is
        then only what explains a death that ran out of memory."""
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, not {timeout_s!r}")
        if heartbeat_s is not None:
            # a limit shorter than a few beats would call a healthy case hung
            heartbeat_s = max(heartbeat_s, 3 * self.beat_interval_s)
        began = time.monotonic()
        offsets = [
            file_size(p) for p in (self.out_path, self.err_path, self.fault_path)
        ]
        self.handed_last = self.began_last = False
        failure = self.wait_ready()
        facts: dict[str, Any] = {"limit_s": timeout_s, "memory_mb": memory_mb}
        if failure is not None:
            facts["startup"] = failure
            facts["timed_out"] = failure["t"] == "startup_timeout"
            return self._finish(facts, offsets, began)
        began = time.monotonic()  # the case's own time starts now, not the import's
        self.handed_last = True
        self._number += 1
        self.cases += 1
        cap = None if entry_caps_memory else memory_mb
        request = {"n": self._number, "payload": payload, "memory_mb": cap}
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._finish(facts, offsets, began)
        self._watch(facts, timeout_s, heartbeat_s)
        return self._finish(facts, offsets, began)

    def _watch(
        self, facts: dict[str, Any], timeout_s: float, heartbeat_s: float | None
    ) -> None:
        """Wait for the payload's ending; a child that outlives the limit is
        ``timed_out``, one whose beats stopped for ``heartbeat_s`` first is ``hung``.

        This process may be kept off the CPU past a deadline (a loaded machine), with
        the child's beats or its result already waiting in the pipe: what waits is
        read before anything is judged (all of it: a result longer than the pipe's
        buffer blocks its writer, and the beats behind it, until read), and a beat
        counts from when the child sent
        it (``at``, the system-wide monotonic clock), so neither a live child nor a
        finished case is ever called stuck because this process looked late, and a
        child that stopped beating before the limit is hung however late it is seen.
        """
        start = last_beat = time.monotonic()

        def take(messages: list[dict[str, Any]]) -> bool:
            """Note beats and starts; True at this payload's ending."""
            nonlocal last_beat
            for message in messages:
                kind = message["t"]
                if kind in ("hb", "start"):
                    last_beat = max(last_beat, _sent_at(message, time.monotonic()))
                    if kind == "start" and message.get("n") == self._number:
                        self.began_last = True
                elif kind in ("done", "raised") and message.get("n") == self._number:
                    facts[kind] = message
                    return True
            return False

        overdue = False  # a deadline passed: read all that waits, then judge
        while True:
            now = time.monotonic()
            end = start + timeout_s
            silent = math.inf if heartbeat_s is None else last_beat + heartbeat_s
            wait = min(end, silent) - now
            if wait <= 0 and overdue:
                hung = silent < end  # the beats stopped before the limit ran out
                facts["hung" if hung else "timed_out"] = True
                if hung:
                    facts["limit_s"] = heartbeat_s
                self._stop_stuck()
                return
            overdue = wait <= 0
            # a message read in part: its writer is alive, waiting for this reader
            writing = bool(self._buffer)
            messages = self._receive(
                0.25 if writing else 0.0 if overdue else min(wait, 0.25)
            )
            if messages is None or take(messages):
                return
            if overdue and (self._buffer or self._selector.select(0)):
                overdue = False  # more waits (a message longer than one read)

    def _stop_stuck(self) -> None:
        """Ask faulthandler for every stack, give it a moment, then kill the group."""
        before = file_size(self.fault_path)
        if hasattr(signal, "SIGUSR1"):
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGUSR1)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline and file_size(self.fault_path) == before:
                time.sleep(0.01)
            time.sleep(0.05)
        self.kill()

    def _receive(self, timeout_s: float) -> list[dict[str, Any]] | None:
        """Messages that arrived within ``timeout_s``; None once the pipe closed."""
        if not self._selector.select(max(timeout_s, 0.0)):
            # A forked grandchild may hold the pipe open after the child died.
            return None if self.proc.poll() is not None else []
        try:
            data = os.read(self._read_fd, 1 << 16)
        except OSError:
            data = b""
        if not data:
            return None
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        return [m for m in map(_parse, lines) if m is not None]

    def _finish(
        self, facts: dict[str, Any], offsets: list[int], began: float
    ) -> IsolatedOutcome:
        done, raised = facts.get("done"), facts.get("raised") or facts.get("startup")
        ended_by_message = done is not None or (
            raised is not None and raised.get("t") == "raised"
        )
        was_killed = facts.get("timed_out") or facts.get("hung")
        if ended_by_message or was_killed:
            code = self.proc.poll()  # only a child that already exited has a status
        else:
            try:  # the pipe closed: the child is exiting, let it finish
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        if done is None or self.proc.poll() is not None:
            self.kill()
        stderr_tail = read_from(self.err_path, offsets[1])
        fault = read_from(self.fault_path, offsets[2]).strip() or None
        if raised is not None and raised.get("t") == "raised":
            fault = fault or raised.get("traceback")
        memory = bool(raised and raised.get("memory")) or (
            facts.get("memory_mb") is not None
            and done is None
            and any(w in stderr_tail for w in _MEMORY_WORDS)
        )
        outcome = IsolatedOutcome(
            result=done["result"] if done is not None else None,
            exit_code=code if (code is not None and code >= 0) else None,
            signal=signal_name(-code) if code and code < 0 and not was_killed else None,
            timed_out=bool(facts.get("timed_out")),
            hung=bool(facts.get("hung")),
            memory_exceeded=memory,
            stdout_tail=read_from(self.out_path, offsets[0]),
            stderr_tail=stderr_tail,
            traceback=fault,
            duration_s=time.monotonic() - began,
            exception=_exception_text(raised),
            limit_s=facts.get("limit_s"),
            memory_mb=facts.get("memory_mb"),
        )
        outcome.detail = describe(outcome)
        if facts.get("startup") is not None:
            outcome.detail += f" (while starting the child for {self.entry})"
        return outcome

    def kill(self) -> None:
        """Kill the child and every process in its group; reap the child."""
        kill_group(self.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):  # a kernel-stuck child
            self.proc.wait(timeout=10)
        self.ready = False

    def close(self, *, graceful: bool = True) -> None:
        """End the child (stdin EOF first when ``graceful``, so it exits cleanly),
        kill whatever is left of its group and remove its files."""
        if graceful and self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        self._selector.close()
        os.close(self._read_fd)
        shutil.rmtree(self.dir, ignore_errors=True)


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) and "t" in message else None


def _sent_at(message: dict[str, Any], received: float) -> float:
    """When the child sent a beat (its ``at``), never later than it was received;
    `received` for a message without a usable time."""
    at = message.get("at")
    if not isinstance(at, (int, float)) or not math.isfinite(at):
        return received
    return min(float(at), received)


def _exception_text(raised: dict[str, Any] | None) -> str | None:
    if raised is None or raised.get("t") != "raised":
        return None
    return f"{raised.get('type')}: {raised.get('message')}"
