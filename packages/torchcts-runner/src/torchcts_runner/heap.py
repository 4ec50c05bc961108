"""Keep Python's cyclic collector off what a run holds from start-up to its end.

An executing process keeps torch and PyTorch's OpInfo database (millions of objects)
alive until it exits, and the controller every record of the run. Each full
collection scans all of it again, and so does the interpreter once more on its way
out: a process holding torch and OpInfo spent 7.7 s (load 17) between its last
``atexit`` handler and its exit, 1.6 s with the heap frozen first. `gc.freeze` moves
every object alive now into a generation no collection scans; what is made later is
collected as usual. Nothing here changes what a case computes.

The start-up itself (importing torch and the OpInfo database, selecting, collecting)
makes those objects, and the collections their allocation triggers scan them again
and again: 0.7-1.0 s of a 2-core machine's 4-5 s before the first case. A process
that starts those imports pauses collection then (`pause_start_up`) until its
start-up is over (`end_start_up`: before its first case, when the run starts in a
process that runs none, at ``pytest_unconfigure`` at the latest); the few cyclic
leftovers of the imports (9,000 objects measured) are frozen with everything else.
"""

from __future__ import annotations

import gc
from typing import Any

_paused = False  # collection paused by `pause_start_up` and not resumed yet


def pause_start_up() -> None:
    """No collection until `end_start_up`."""
    global _paused
    _paused = gc.isenabled()
    gc.disable()


def end_start_up() -> None:
    """The start-up is over: freeze what it made and resume collection if
    `pause_start_up` paused it; cheap to call again (once per case)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def freeze_start_up() -> None:
    """After start-up: what is alive now (imports, case table, plan) lives until the
    process exits, so no later collection scans it."""
    gc.freeze()


def freeze_for_exit() -> None:
    """After the last case: freeze the heap and stop collecting. The end of a run
    writes artifacts and exits; a collection over its records and imports then costs
    seconds and frees nothing that matters."""
    gc.freeze()
    gc.disable()


class _Unkept(list[Any]):
    """A list that keeps nothing added to it."""

    def append(self, item: Any) -> None:
        """Dropped."""

    def extend(self, items: Any) -> None:
        """Dropped."""


def keep_no_phase_reports(reporter: Any) -> None:
    """pytest's terminal reporter keeps every report it is shown, by its category,
    until the session ends; a passing setup's or teardown's category is the empty
    one, which nothing reads (pytest's summary line and colour skip it). That is two
    reports a case (at level 4 about 210,000, each with its dicts and lists) that
    each full collection scanned again and the heap held to the exit. The empty
    category is given a list that keeps nothing; a failed or skipped setup or
    teardown has a category of its own and is kept as before."""
    stats = getattr(reporter, "stats", None)
    if isinstance(stats, dict) and not stats.get(""):
        stats[""] = _Unkept()


__all__ = [
    "end_start_up",
    "freeze_for_exit",
    "freeze_start_up",
    "keep_no_phase_reports",
    "pause_start_up",
]
