"""How a ``torchcts-run`` ends: its exit status from pytest's code and the plugin's
status file, and the line that says why (with the command that continues an
interrupted run). The exit codes are a contract CI gates on (`EXIT_CODES`)."""

from __future__ import annotations

import json
import os
import shlex
import signal
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from torchcts_runner.run_folder import USER_COMMAND_ENV
from torchcts_runner.run_summary import report_words

NOT_PASSED = ("failed", "error", "unsupported", "crashed")
OK, CASES_FAILED, INTERNAL, USAGE, NO_CASES, BACKEND_UNUSABLE = 0, 1, 3, 4, 5, 6
EXIT_CODES = {
    0: "every executed case passed (not_run and skipped cases are not failures)",
    1: "the run completed and some executed case did not pass (see --fail-on)",
    3: "internal error, or the run ended abnormally (continue with --resume)",
    4: "usage or manifest error, or a malformed or unknown option (nothing ran)",
    5: "the selection holds no case to run",
    6: "the backend could not be imported or its device is unusable",
    130: "interrupted by SIGINT (Ctrl-C): partial report written; --resume continues",
    143: "interrupted by SIGTERM: partial report written; --resume continues",
}


def judge(code: int, status: dict[str, object] | None, fail_on: set[str]) -> int:
    """The exit status of a run from pytest's code and the plugin's status file."""
    if status is None:
        if code > 128:  # a SIGINT/SIGTERM before the session began (`run_child`)
            print(
                f"torchcts-run: interrupted by {_signal_name(code - 128)} before the "
                "session began; the journal keeps whatever an earlier part of the run "
                "recorded: continue with: "
                f"{resume_command(os.environ.get(USER_COMMAND_ENV, ''))}",
                flush=True,
            )
            return code
        if code in (0, 1):
            print(
                "torchcts-run: the run ended abnormally (no session end); the journal "
                "keeps every finished case: continue with --resume",
                flush=True,
            )
            return INTERNAL
        if code < 0:
            # the run's own process died (a crash in a case run in process, -n 0,
            # or a kill): nothing past the journal was written, so say so
            print(
                f"torchcts-run: the run's process died by {_signal_name(-code)} "
                "before its session end (a crash in a case run in process takes "
                "the run with it); the journal keeps every finished case and the "
                "runlog names the case in flight, which --resume runs isolated: "
                f"continue with: {resume_command(os.environ.get(USER_COMMAND_ENV, ''))}",
                flush=True,
            )
            return INTERNAL
        return code if code in (USAGE, NO_CASES) else (INTERNAL if code else OK)
    report = report_words(status)
    signum = status.get("interrupted_by")
    if isinstance(signum, int):
        print(
            f"torchcts-run: run interrupted; partial {report}; continue "
            f"with: {resume_command(os.environ.get(USER_COMMAND_ENV, ''))}",
            flush=True,
        )
        return 128 + signum
    if status.get("write_error"):
        print(
            f"torchcts-run: results could not be written ({status['write_error']}); "
            "free space, then continue with --resume",
            flush=True,
        )
        return INTERNAL
    if status.get("backend_unusable"):
        print(
            f"torchcts-run: the backend could not be imported or its device is "
            f"unusable (see the probe table); {report}",
            flush=True,
        )
        return BACKEND_UNUSABLE
    if not status.get("complete"):
        print(
            f"torchcts-run: run incomplete (continue with --resume); {report}",
            flush=True,
        )
        return INTERNAL if code in (0, 1) else code
    if code not in (0, 1):
        return code
    counts = status.get("counts")
    counts = counts if isinstance(counts, dict) else {}
    failing, which = _tally(counts, sorted(fail_on))
    if failing:
        print(
            f"torchcts-run: run complete; {failing} case(s) did not pass ({which}); "
            f"{report}",
            flush=True,
        )
        return CASES_FAILED
    others, which = _tally(counts, NOT_PASSED)
    if others:  # --no-fail, or --fail-on naming other statuses
        print(
            f"torchcts-run: run complete; {others} case(s) did not pass ({which}), "
            f"none with a status that fails the run; {report}",
            flush=True,
        )
        return OK
    print(
        f"torchcts-run: run complete; every executed case passed; {report}",
        flush=True,
    )
    return OK


def _tally(counts: Mapping[str, Any], statuses: Iterable[str]) -> tuple[int, str]:
    """How many cases have one of `statuses`, and ``"2 failed, 1 crashed"``."""
    found = {name: int(counts.get(name, 0)) for name in statuses}
    which = ", ".join(f"{n} {name}" for name, n in found.items() if n)
    return sum(found.values()), which


def read_status(path: Path) -> dict[str, object] | None:
    """The plugin's status file, None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def resume_command(command: str) -> str:
    """The command that continues an interrupted run: what the user typed, plus
    ``--resume`` (through ``ARGS`` for a make target)."""
    if not command:
        return "the same command with --resume"
    if command.startswith("make "):
        words = shlex.split(command)
        args = next((w for w in words if w.startswith("ARGS=")), None)
        if args is None:
            return shlex.join([*words, "ARGS=--resume"])
        words[words.index(args)] = f"{args} --resume"
        return shlex.join(words)
    return command if "--resume" in shlex.split(command) else f"{command} --resume"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


__all__ = [
    "BACKEND_UNUSABLE",
    "CASES_FAILED",
    "EXIT_CODES",
    "INTERNAL",
    "NOT_PASSED",
    "NO_CASES",
    "OK",
    "USAGE",
    "judge",
    "read_status",
    "resume_command",
]
