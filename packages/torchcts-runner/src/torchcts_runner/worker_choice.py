"""How many xdist workers a run gets when ``-n`` is not given: chosen by the work.

A worker is a whole interpreter (pytest, torch, the backend, the case catalogue:
seconds of CPU before its first case), and with workers every case's record also
crosses a process boundary to the controller, which competes with the workers for
the same cores. A run in process pays neither, but runs its cases one at a time.
So a small selection runs in process and a large one on one worker per core; the
boundary is where the workers' fixed cost is paid back by running cases side by
side. Measured on the shared 2-core development machine (load 3-10), in turns:
``-n 2`` took 1.06-2.03x the wall time of ``-n 0`` on shards of the 15-op slice from
40 to 2,966 cases (``bench/bench_workers.py``) and 1.07x (0.82-1.32) on the whole of
CPU validation level 2 (8,484 cases), with 11-26 more CPU seconds every time. The
boundary sits at 5,000, below that tie, because a second free core halves the
workers' per-case cost (the crossover moves down on an idle machine) and because a
long run keeps what only workers give: a broken device costs a worker, not the
isolation of every later case. It scales with the worker count as the share of
case time the extra workers take off (``in_process_limit``).
An explicit ``-n`` always wins; the manifest's ``RESOURCE_LIMITS.workers`` caps the
count. No pytest, no torch: the plugin asks this once it knows the planned cases.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from torchcts_runner.device_families import ACCELERATORS

MAX_WORKERS = 8
# planned cases that still run in process when two workers could run them
IN_PROCESS_UP_TO = 5000


@dataclass(frozen=True)
class WorkerChoice:
    """The executing processes of a run and why (run metadata, header line)."""

    count: int  # xdist workers; 0: the cases run in the pytest process itself
    why: str
    by_work: bool  # chosen here from the planned cases (not an explicit -n)
    planned: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The metadata form (``options.workers``)."""
        return {
            "count": self.count,
            "chosen": "by the work" if self.by_work else "given",
            "planned": self.planned,
            "why": self.why,
        }


def default_workers(device: str, cores: int | None = None) -> int:
    """One worker per accelerator process; one per core (at most 8) otherwise."""
    if device in ACCELERATORS:
        return 1
    return max(1, min(cores or available_cores(), MAX_WORKERS))


def available_cores() -> int:
    """Processors this process may run on (its affinity, where the OS says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def in_process_limit(workers: int) -> int:
    """The most planned cases that still run in process when `workers` could run them.

    Workers save the part of the case time they take off one process, 1 - 1/W of it,
    against a fixed cost that hardly grows with W (they start side by side): the
    measured two-worker boundary, scaled by (1 - 1/2) / (1 - 1/W). One worker saves
    no time, only a crash's restart cost, so it keeps the two-worker boundary.
    """
    if workers <= 2:
        return IN_PROCESS_UP_TO
    return round(IN_PROCESS_UP_TO * 0.5 / (1 - 1 / workers))


def workers_for(device: str, cores: int, cap: int | None = None) -> int:
    """The workers a run gets when it runs on xdist: the device's count, capped by
    the manifest's ``RESOURCE_LIMITS.workers``."""
    workers = default_workers(device, cores)
    return min(workers, cap) if cap is not None and cap > 0 else workers


def choose_workers(
    planned: int, *, device: str, cores: int, cap: int | None = None
) -> WorkerChoice:
    """In process for a small selection, else the device's worker count."""
    workers = workers_for(device, cores, cap)
    limit = in_process_limit(workers)
    where = f"{cores} core{'s' if cores != 1 else ''}"
    if planned <= limit:
        return WorkerChoice(
            0,
            f"in process (-n 0): {planned} planned case(s), at most {limit} run "
            f"sooner without xdist workers on {where}",
            by_work=True,
            planned=planned,
        )
    return WorkerChoice(
        workers,
        f"{workers} xdist worker{'s' if workers != 1 else ''} (-n {workers}): "
        f"{planned} planned cases, over the {limit} that run sooner in process on "
        f"{where}",
        by_work=True,
        planned=planned,
    )


def given_workers(count: int | None) -> WorkerChoice:
    """The choice an explicit ``-n`` made (None: pytest ran without ``-n``)."""
    if count is None:
        return WorkerChoice(0, "in process (no -n)", by_work=False)
    where = "in process" if count == 0 else f"{count} xdist worker(s)"
    return WorkerChoice(count, f"{where} (-n {count} given)", by_work=False)


__all__ = [
    "IN_PROCESS_UP_TO",
    "WorkerChoice",
    "available_cores",
    "choose_workers",
    "default_workers",
    "given_workers",
    "in_process_limit",
    "workers_for",
]
