"""How a run ended, said twice: summary lines for the terminal, and the status file
that tells `torchcts-run` which exit status to give (no pytest)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from torchcts_schema import write_atomic

from torchcts_runner.run_writer import FinishSummary


def signal_label(signum: int | None) -> str | None:
    """``SIGINT`` for 2; None when no signal ended the run."""
    return None if signum is None else signal.Signals(signum).name


def summary_lines(
    run_key: str,
    done: FinishSummary,
    *,
    interrupted: bool,
    signum: int | None,
    in_flight: int,
    carried: int = 0,
    cwd: Path | None = None,
) -> list[str]:
    """The run's counts, how it ended and where its reports are: the one line that
    lists every report path (`torchcts-run` does not repeat them).

    `carried`: cases a resumed run kept from its earlier sessions (a ``--resume``,
    or the continuation of a run that died in process). They are in the run's
    counts but not in pytest's summary line, which counts this session's items, so
    the two differ and the lines say why."""
    counts = ", ".join(
        f"{k} {v}" + _via_fallback(k, done.fallback_passed)
        for k, v in done.counts.items()
        if v
    )
    lines = [f"TorchCTS {run_key}: {counts or 'no cases'}"]
    if carried:
        lines.append(
            f"resumed: {carried} case(s) from earlier session(s) are counted above, "
            "not run again; pytest's line below counts this session's only"
        )
    name = signal_label(signum)
    if interrupted:
        lines.append(
            f"run interrupted{f' by {name}' if name else ''}: {in_flight} case(s) in "
            "flight were not recorded and run again on resume; "
            f"{done.missing} planned case(s) without a record"
        )
    elif not done.complete:
        lines.append(
            f"run incomplete: {done.missing} planned case(s) without a record; "
            "continue with --resume"
        )
    paths = [shown(p, cwd) for p in done.reports or [r for r in [done.report] if r]]
    lines.append(f"reports: {', '.join(paths) or 'none'} ({done.report_note})")
    return lines


def no_case_line(selection: str, planned: int, written: str | None) -> str:
    """Why a run ran nothing (pytest's exit status 5): its selection, as
    `RunSettings.selection_words` says it, matched no case; `planned` cases were
    selected before -k, -m or a plugin deselected them all; `written` is the
    folder that records the empty run, None when nothing was written."""
    left = f": none of its {planned} planned case(s) was left to run" if planned else ""
    where = (
        f"nothing ran; {written} records the empty run"
        if written
        else "nothing ran and no result was written"
    )
    return f"TorchCTS: the selection matched no case ({selection}){left}; {where}"


def stopped_line(problem: str) -> str:
    """Why a run stopped after its first case: the device never worked."""
    return (
        f"run stopped: {problem}; every other case would end the same way, so none "
        "ran: make the device usable, then continue with --resume (after a fix to the "
        "manifest, start the run afresh: --resume continues only the same run)"
    )


def _via_fallback(status: str, count: int) -> str:
    """A pass through the device's CPU fallback is not a native pass: say how many."""
    return f" ({count} via CPU fallback)" if status == "passed" and count else ""


def shown(path: Path, cwd: Path | None = None) -> str:
    """`path` relative to `cwd` (default: here) when inside it, else as it is."""
    here = (cwd or Path.cwd()).resolve()
    try:
        return path.resolve().relative_to(here).as_posix()
    except ValueError:
        return str(path)


def write_status(
    path: Path,
    done: FinishSummary | None,
    *,
    complete: bool,
    signum: int | None,
    results_dir: Path,
    backend_unusable: bool,
    write_error: str | None,
    run_key: str | None = None,
    workers: dict[str, object] | None = None,
) -> None:
    """The facts `torchcts-run` turns into its exit status (README: exit status)."""
    status = {
        "ended": True,
        "workers": workers,
        "run_key": run_key,
        "report": str(done.report) if done is not None else None,
        "reports": [str(p) for p in done.reports] if done is not None else [],
        "complete": complete,
        "interrupted_by": signum,
        "counts": done.counts if done is not None else {},
        "passed_via_cpu_fallback": done.fallback_passed if done is not None else 0,
        "results": str(results_dir),
        "history": str(done.history) if done is not None and done.history else None,
        "backend_unusable": backend_unusable,
        "write_error": write_error,
    }
    write_atomic(path, json.dumps(status))


def write_start_status(path: Path, workers: dict[str, object]) -> None:
    """Before the first case: the executing processes chosen, in the status file
    the session's end replaces. A file still saying ``"ended": false`` afterwards
    tells `torchcts-run` the session died, and how it was running its cases."""
    write_atomic(path, json.dumps({"ended": False, "workers": workers}))


__all__ = [
    "shown",
    "signal_label",
    "summary_lines",
    "write_start_status",
    "write_status",
]
