"""``torchcts-run --json``: the run's end as one JSON object, for CI scripts.

The human summary lines are for people; a script wants the exit status, the counts and
where the artifacts are without parsing prose. Paths are relative to the directory the
command ran in (never absolute: the object is meant to be pasted into issues and CI
logs). Built from the status file the plugin writes at the session end, so it says
exactly what decided the exit status. No pytest, no torch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SUMMARY_FORMAT = "torchcts-run-summary"
SUMMARY_VERSION = 1
PATH_KEYS = ("results", "report", "history")


def relative(path: object, cwd: Path) -> str | None:
    """`path` relative to `cwd` in POSIX form; None for no path."""
    if not isinstance(path, str) or not path:
        return None
    target = Path(path)
    if not target.is_absolute():
        return target.as_posix()
    try:
        return Path(os.path.relpath(target, cwd)).as_posix()
    except ValueError:  # another drive (Windows): only the file name is shareable
        return target.name


def report_words(status: dict[str, object]) -> str:
    """Where the report is, for the final line of ``torchcts-run``.

    The plugin's end line already lists every report path when the status file names
    them; saying them again would print each path twice.
    """
    if status.get("reports"):
        return "reports listed above"
    report = status.get("report")
    return f"report: {report}" if report else "no report was written"


def run_summary(
    exit_code: int,
    status: dict[str, object] | None,
    *,
    cwd: Path,
    exit_meaning: str,
    error: str | None = None,
) -> dict[str, object]:
    """The JSON-able summary of one ``torchcts-run`` invocation.

    `status` is the plugin's status file (None when the session never reached its end).
    """
    status = status or {}
    counts = status.get("counts")
    summary: dict[str, object] = {
        "format": SUMMARY_FORMAT,
        "version": SUMMARY_VERSION,
        "exit_code": exit_code,
        "exit_meaning": exit_meaning,
        "run_key": status.get("run_key"),
        "complete": bool(status.get("complete", False)),
        "interrupted_by": status.get("interrupted_by"),
        "backend_unusable": bool(status.get("backend_unusable", False)),
        "write_error": status.get("write_error"),
        "counts": dict(counts) if isinstance(counts, dict) else {},
        "passed_via_cpu_fallback": _count(status.get("passed_via_cpu_fallback")),
        "error": error,
    }
    for key in PATH_KEYS:
        summary[key] = relative(status.get(key), cwd)
    return summary


def _count(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0


def summary_text(summary: dict[str, object]) -> str:
    """One line of JSON (sorted keys, ASCII), ending in a newline."""
    return json.dumps(summary, sort_keys=True) + "\n"


__all__ = ["SUMMARY_FORMAT", "relative", "report_words", "run_summary", "summary_text"]
