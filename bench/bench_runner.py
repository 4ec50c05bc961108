"""The runner's in-process deadline guard, armed and disarmed around nothing.

Whole runs are measured elsewhere, each against figures taken in the same
invocation: CPU validation by level against its bare calls (``bench_validation``),
the 15-op slice (``bench_slice``), in process against workers by size
(``bench_workers``), a crash-heavy slice (``bench_crash``), ``--isolate all``
(``bench_isolate``) and the one-case rerun (``bench_rerun``). This module used to
divide a two-worker wall time by a serial sum of bare calls timed at another moment,
and subtract bare calls timed in another process from runlog gaps (a negative
"overhead"); those rows are gone.
"""

from __future__ import annotations

import tempfile
import time

from measure import load_average, load_text
from run import BenchRow


def _guard_row() -> BenchRow:
    """One case's in-process deadline guard (alarm, watchdog, faulthandler backstop),
    armed and disarmed 100,000 times around nothing."""
    from torchcts_runner.timeouts import BACKSTOP, case_deadline

    count = 100_000
    before = load_average()
    with tempfile.TemporaryFile("w+") as backstop:
        start = time.perf_counter()
        try:
            for _ in range(count):
                with case_deadline(60.0, lambda: None, backstop):
                    pass
            per = (time.perf_counter() - start) / count
        finally:
            # as the runner does once no case follows: left armed, the backstop
            # ended this process minutes later, in whichever module ran then
            BACKSTOP.release()
    note = (
        "one long-lived watchdog and one faulthandler backstop armed for many cases "
        f"(was 352-371 us with the backstop armed and cancelled per case); "
        f"{load_text([before, load_average()])}"
    )
    return BenchRow("runner", "deadline guard arm+disarm", per * 1e6, "us", note)


def rows() -> list[BenchRow]:
    """Measure and return the runner's rows."""
    return [_guard_row()]
