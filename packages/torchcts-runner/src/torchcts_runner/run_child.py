"""The pytest child processes of ``torchcts-run``: the run itself, its continuation
on workers after it died in process (`continuation`), and the session that finishes
a run a signal could not stop (`child_signals`). No pytest, no torch."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path

from torchcts_runner.child_signals import ChildSignals, grace_seconds
from torchcts_runner.continuation import continuation
from torchcts_runner.interrupts import PENDING_ENV
from torchcts_runner.run_judgement import read_status

# the module run as pytest: pytest itself, with a quick exit (see the module)
PYTEST_PROCESS = "torchcts_runner.pytest_process"


def run_child(
    args: list[str], *, stdout: int | None = None, continue_on: int | None = None
) -> tuple[int, dict[str, object] | None]:
    """pytest's exit code and the plugin's status file (None: no session end).

    `stdout` is a file descriptor for the child's stdout (``--json`` gives stderr's).
    With `continue_on` (the workers were left to the work), a run that died in
    process is continued once, with ``--resume`` on that many xdist workers
    (`continuation` says when).
    """
    with tempfile.TemporaryDirectory(prefix="torchcts-run-") as tmp:
        return _run_children(args, Path(tmp), stdout, continue_on)


def _run_children(
    args: list[str], tmp: Path, stdout: int | None, continue_on: int | None
) -> tuple[int, dict[str, object] | None]:
    status_file = tmp / "status.json"

    def began() -> bool:  # the session's start status: its journal is open
        status = read_status(status_file)
        return status is not None and status.get("ended") is False

    with ChildSignals(tmp / "interrupt-ack", grace_seconds(), began) as signals:
        while True:
            status_file.unlink(missing_ok=True)
            code = signals.call(_pytest_command(args, status_file), stdout=stdout)
            received = signals.received
            if signals.stuck:
                return _finish_stuck(args, status_file, signals, stdout)
            status = read_status(status_file)
            if status is None and received:  # interrupted before the session began
                return 128 + received[0], None
            if status is None or status.get("ended") is not False or received:
                return code, status  # a Ctrl-C also means: no continuation
            why = continuation(code, status, continue_on) if continue_on else None
            if why is None:
                return code, None  # the session did not end
            print(f"torchcts-run: {why}", flush=True)
            args = _resuming(on_workers(args, str(continue_on)))
            continue_on = None  # an explicit -n now: never continued again


def _finish_stuck(
    args: list[str], status_file: Path, signals: ChildSignals, stdout: int | None
) -> tuple[int, dict[str, object] | None]:
    """The run did not answer a Ctrl-C or SIGTERM (a case stuck in native code): it
    was killed; a session of the same run finishes it as interrupted (snapshot,
    partial report, the in-flight cases named) without running a case."""
    signum = signals.received[0]
    print(
        f"torchcts-run: the run did not answer {signal.Signals(signum).name} within "
        f"{signals.grace_s:g} s (a case holds the interpreter, such as a hang in "
        "native code): stopped it; writing the partial report",
        flush=True,
    )
    finish = _resuming(on_workers(args, "0") if "-n" in args else args)
    status_file.unlink(missing_ok=True)
    env = {**os.environ, PENDING_ENV: str(signum)}
    code = signals.call(_pytest_command(finish, status_file), stdout=stdout, env=env)
    return code, read_status(status_file)


def _pytest_command(args: list[str], status_file: Path) -> list[str]:
    """The pytest child's command line, telling it where to write its status."""
    return [sys.executable, "-m", PYTEST_PROCESS, *args,
            "--torchcts-status-file", str(status_file)]  # fmt: skip


def _resuming(args: list[str]) -> list[str]:
    """`args` continuing the run's journal (``--resume`` added once)."""
    return args if "--resume" in args else [*args, "--resume"]


def on_workers(args: list[str], workers: str) -> list[str]:
    """`args` with pytest's ``-n`` value replaced by `workers`."""
    out = list(args)
    where = out.index("-n")
    out[where + 1] = workers
    return out


__all__ = ["PYTEST_PROCESS", "on_workers", "run_child"]
