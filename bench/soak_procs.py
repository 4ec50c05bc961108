"""The soak's process handling: start a run, find its controller and workers, end it.

Linux only (it reads ``/proc``). A run starts in its own session, so Ctrl-C can be sent
to its process group, and with a tag in its environment, so that every descendant is
found at the end, even one that left the group (isolated cases run in a session of
their own) or was orphaned when its parent was killed.

The process tree of ``torchcts-run`` (``python -m torchcts_runner.cli``) is::

    torchcts_runner.cli              the CLI, session leader
      python -m torchcts_runner.pytest_process ...   pytest, the xdist controller: the
                                     only journal writer (the CLI's `PYTEST_PROCESS`)
        python -u -c 'import sys;exec(eval(sys.stdin.readline()))'   an xdist worker
        python -m torchcts_runner.probes ...                         start-up probes

xdist starts workers through execnet's popen gateway, whose bootstrap is that ``-c``
line; it is the one stable mark a worker's command line has.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from torchcts_runner.run_child import PYTEST_PROCESS

TAG_ENV = "TORCHCTS_SOAK_TAG"
WORKER_MARK = "sys.stdin.readline"  # execnet's popen bootstrap
POLL_S = 0.05


@dataclass
class Run:
    """One started ``torchcts-run`` and the tag its whole process tree carries."""

    proc: subprocess.Popen[bytes]
    tag: str
    started: float

    def ended(self) -> bool:
        """The CLI process has exited (its descendants may still live)."""
        return self.proc.poll() is not None


def launch(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> Run:
    """Start `command` in a new session, output appended to `log`."""
    tag = uuid.uuid4().hex
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env={**env, TAG_ENV: tag},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Run(proc, tag, time.monotonic())


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent_and_state(pid: int) -> tuple[int, str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name may hold spaces
    return int(fields[1]), fields[0]


def command_line(pid: int) -> str:
    """The process's arguments joined by spaces ('' when it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def children(pid: int) -> list[int]:
    """Live (not zombie) direct children of `pid`, sorted."""
    out = []
    for child in _pids():
        facts = _parent_and_state(child)
        if facts is not None and facts[0] == pid and facts[1] != "Z":
            out.append(child)
    return sorted(out)


def tagged(tag: str) -> list[int]:
    """Live processes whose environment carries `tag` (a zombie has no environment)."""
    mark = f"{TAG_ENV}={tag}".encode()
    out = []
    for pid in _pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if mark in environ.split(b"\0"):
            out.append(pid)
    return sorted(out)


def controller(run: Run) -> int | None:
    """The pytest controller: the CLI's child that runs `PYTEST_PROCESS`."""
    for pid in children(run.proc.pid):
        if is_controller(command_line(pid)):
            return pid
    return None


def is_controller(command: str) -> bool:
    """Is `command` (a command line joined by spaces) the CLI's pytest process?"""
    return f" -m {PYTEST_PROCESS} " in f" {command} "


def workers(run: Run) -> list[int]:
    """The xdist workers alive now (children of the controller)."""
    pid = controller(run)
    if pid is None:
        return []
    return [c for c in children(pid) if WORKER_MARK in command_line(c)]


def signal_group(run: Run, signum: int) -> None:
    """Send `signum` to the run's process group (what Ctrl-C in a terminal does)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(run.proc.pid, signum)


def kill(pid: int) -> None:
    """SIGKILL one process; gone already is fine."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def wait_exit(run: Run, limit_s: float) -> int | None:
    """The CLI's exit status, or None when it is still running after `limit_s`."""
    try:
        return run.proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        return None


def wait_gone(run: Run, limit_s: float) -> bool:
    """Wait until no process of the run is left; False when some outlived `limit_s`."""
    deadline = time.monotonic() + limit_s
    while tagged(run.tag):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S * 4)
    return True


def end(run: Run) -> int:
    """SIGKILL whatever is left of the run; returns how many processes were killed."""
    left = tagged(run.tag)
    signal_group(run, signal.SIGKILL)
    for pid in left:
        kill(pid)
    if run.proc.poll() is None:
        run.proc.wait(timeout=10)
    return len(left)


__all__ = [
    "TAG_ENV",
    "Run",
    "children",
    "command_line",
    "controller",
    "end",
    "kill",
    "launch",
    "signal_group",
    "tagged",
    "wait_exit",
    "wait_gone",
    "workers",
]
