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

During the cases the heap grows by what the run keeps (a record and a report per
case): Python's full collections, each scanning everything not frozen, came 14 times
at level 4 and cost 4.6-5.9 s of a 141 s run. Right after a full collection every
unreachable object is gone, so what is left is alive and mostly stays so: it is
frozen then (`freeze_after_full_collections`), and the next full collection scans
only what was made since. The price is that an object alive at that moment which
later becomes part of an unreachable cycle is never collected (a freed object without
a cycle is still freed at once): at most one case's transient cycles per full
collection.
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
    process exits, so no later collection scans it; from now on each full collection
    freezes what it found alive (`freeze_after_full_collections`)."""
    gc.freeze()
    freeze_after_full_collections()


def freeze_after_full_collections() -> None:
    """Freeze the heap after every full collection from now on (see the module
    docstring); calling it again adds nothing."""
    if _freeze_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_survivors)


def _freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    """A `gc.callbacks` entry: after a full collection, what survived is frozen."""
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def freeze_for_exit() -> None:
    """After the last case: freeze the heap and stop collecting. The end of a run
    writes artifacts and exits; a collection over its records and imports then costs
    seconds and frees nothing that matters."""
    gc.freeze()
    gc.disable()
    if _freeze_survivors in gc.callbacks:
        gc.callbacks.remove(_freeze_survivors)


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
    "freeze_after_full_collections",
    "freeze_for_exit",
    "freeze_start_up",
    "keep_no_phase_reports",
    "pause_start_up",
]
