"""When `torchcts-run` continues a run that died in process: at once, with ``--resume``.

A run the work put in process (`worker_choice`) has no worker to lose: a case that
segfaults, aborts or outlives its limit ends the pytest process itself. The journal
keeps every finished case and the crash leaves its evidence (the fatal-signal dump,
the timeout marker), so ``--resume`` records that case as crashed and runs the rest
of its op isolated: what a replaced xdist worker gives, one restart per crashing op.
`torchcts-run` does it at once, as long as each attempt plans fewer cases than the
one before (so it ends), and never after SIGKILL, SIGTERM or SIGINT: someone ended
the run on purpose, or the kernel's OOM killer did, and the user decides then. An
explicit ``-n 0`` is never continued: it ends as it always did. No pytest, no torch.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping

STOPPED_ON_PURPOSE = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)


def how_it_ended(code: int) -> str:
    """``SIGSEGV`` for -11, ``exit status 1`` otherwise."""
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def continuation(
    code: int, started: Mapping[str, object] | None, planned_before: int | None
) -> str | None:
    """Why the run goes on (the line `torchcts-run` prints), or None to stop.

    `code` is the pytest process's exit status (negative: a signal), `started` the
    status its session wrote before the first case (None: it never got there), and
    `planned_before` what the previous attempt planned (None: first attempt).
    """
    if started is None or started.get("ended") is not False:
        return None
    workers = started.get("workers")
    if not isinstance(workers, Mapping):
        return None
    if workers.get("count") != 0 or workers.get("chosen") != "by the work":
        return None
    if code < 0 and -code in STOPPED_ON_PURPOSE:
        return None
    planned = workers.get("planned")
    if not isinstance(planned, int) or planned <= 0:
        return None
    if planned_before is not None and planned >= planned_before:
        return None  # the last attempt recorded nothing: it would die the same way
    return (
        f"the in-process run of {planned} planned case(s) ended abnormally "
        f"({how_it_ended(code)}); continuing with --resume (the case it died in is "
        "recorded from its evidence and the rest of its op runs isolated)"
    )


__all__ = ["STOPPED_ON_PURPOSE", "continuation", "how_it_ended"]
