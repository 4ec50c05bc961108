"""When `torchcts-run` continues a run that died in process: at once, with ``--resume``
on xdist workers.

A run the work put in process (`worker_choice`) has no worker to lose: a case that
segfaults, aborts or outlives its limit ends the pytest process itself. The journal
keeps every finished case and the crash leaves its evidence (the fatal-signal dump,
the timeout marker), so ``--resume`` records that case as crashed and runs the rest
of its op isolated. The continuation runs on the workers the run would have had
(an explicit ``-n``): crashes come in runs, and from then on one costs a worker
restart while the other workers go on, not a restart of the whole run (measured on
simdev's demo profile, three crashing ops: in process with a restart per crash took
1.29x the wall time of two workers). So a run is continued once at most; never
after SIGKILL, SIGTERM or SIGINT (someone ended the run on purpose, or the kernel's
OOM killer did, and the user decides then), and never a run whose ``-n`` was given
(an explicit ``-n 0`` ends as it always did). No pytest, no torch.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping

STOPPED_ON_PURPOSE = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)


def how_it_ended(code: int) -> str:
    """``SIGSEGV`` for -11, ``exit status N`` otherwise; status 1 of a session that
    never ended is the per-case limit's watchdog (faulthandler exits 1 after its
    dump of a case stuck where no Python code runs) unless a backend exited so."""
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    if code == 1:
        return "exit status 1: a case outlived its time limit, or the backend exited"
    return f"exit status {code}"


def continuation(
    code: int, started: Mapping[str, object] | None, workers: int
) -> str | None:
    """Why the run goes on on `workers` xdist workers (the line `torchcts-run`
    prints), or None to stop.

    `code` is the pytest process's exit status (negative: a signal), `started` the
    status its session wrote before the first case (None: it never got there).
    """
    if started is None or started.get("ended") is not False:
        return None
    chosen = started.get("workers")
    if not isinstance(chosen, Mapping):
        return None
    if chosen.get("count") != 0 or chosen.get("chosen") != "by the work":
        return None
    if code < 0 and -code in STOPPED_ON_PURPOSE:
        return None
    planned = chosen.get("planned")
    if not isinstance(planned, int) or planned <= 0 or workers < 1:
        return None
    return (
        f"the in-process run of {planned} planned case(s) ended abnormally "
        f"({how_it_ended(code)}); continuing with --resume on {workers} xdist "
        f"worker(s) (-n {workers}): the case it died in is recorded from its "
        "evidence, the rest of its op runs isolated, and a later crash costs a "
        "worker, not the run"
    )


__all__ = ["STOPPED_ON_PURPOSE", "continuation", "how_it_ended"]
