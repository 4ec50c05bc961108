"""How many xdist workers a run gets when ``-n`` is not given: chosen by the work.

A worker is a whole interpreter (pytest, torch, the backend, the case catalogue:
seconds of CPU before its first case), and with workers every case's record also
crosses a process boundary to the controller, which competes with the workers for
the same cores. A run in process pays neither, but runs its cases one at a time.
Measured on the 2-core development machine, CPU validation level 4 (105,408 cases),
interleaved, workers given their share of the cores as threads (`worker_threads`):
in process 185 s wall and 216 CPU-s; on two workers 189 s and 333 CPU-s. Two
workers and their controller pay about 1.5x the CPU of a case in process (its
report serialized, sent, read back and journaled by a controller on the same
cores), and in wall they run it no sooner than one process: as if a case cost them
twice its time in process. So W workers are taken to save a share 1 - 2/W of the
case time, and nothing on two cores: there a run stays in process at any size. With
more cores the boundary is where that saving pays back the workers' fixed cost
(about 5 s: their start-up and collection of the plan, the controller, the tail),
fewer cases the more cores (``in_process_limit``). On an accelerator the one worker
saves no time; a long run gets it anyway past `IN_PROCESS_UP_TO` cases for what only
a worker gives: a broken device costs a worker, not the isolation of every later
case.
An explicit ``-n`` always wins; the manifest's ``RESOURCE_LIMITS.workers`` caps the
count. No pytest, no torch: the plugin asks this once it knows the planned cases.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from torchcts_runner.device_families import ACCELERATORS

MAX_WORKERS = 8
# planned cases that still run in process on an accelerator (one possible worker)
IN_PROCESS_UP_TO = 5000
# what workers cost beyond running in process (see the module's docstring)
WORKER_FIXED_S = 5.0
WORKER_CPU_FACTOR = 2.0
CASE_S = 0.002  # a case's time in process (2.1 ms a case at CPU level 4)


@dataclass(frozen=True)
class WorkerChoice:
    """The executing processes of a run and why (run metadata, header line)."""

    count: int  # xdist workers; 0: the cases run in the pytest process itself
    why: str
    by_work: bool  # chosen here from the planned cases (not an explicit -n)
    planned: int | None = None
    threads: int | None = None  # each worker's intra-op threads (worker_threads)

    def described(self) -> str:
        """The header line's words: why, and the threads each worker was given."""
        if self.threads is None:
            return self.why
        plural = "s" if self.threads != 1 else ""
        return f"{self.why}; {self.threads} intra-op thread{plural} a worker"

    def to_dict(self) -> dict[str, object]:
        """The metadata form (``options.workers``)."""
        return {
            "count": self.count,
            "chosen": "by the work" if self.by_work else "given",
            "planned": self.planned,
            "why": self.why,
            "threads": self.threads,
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


def in_process_limit(workers: int, *, accelerator: bool = False) -> int | None:
    """The most planned cases that still run in process when `workers` could run
    them; None: in process at any size (the workers would never pay).

    W workers save the share 1 - `WORKER_CPU_FACTOR`/W of the case time against a
    fixed cost that hardly grows with W (they start side by side). An accelerator's
    one worker saves no time, only a broken device's cost: `IN_PROCESS_UP_TO`.
    """
    if accelerator:
        return IN_PROCESS_UP_TO
    saved = 1 - WORKER_CPU_FACTOR / workers
    if saved <= 0:
        return None
    return round(WORKER_FIXED_S / (saved * CASE_S))


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
    limit = in_process_limit(workers, accelerator=device in ACCELERATORS)
    where = f"{cores} core{'s' if cores != 1 else ''}"
    if limit is None:
        return WorkerChoice(
            0,
            f"in process (-n 0): {planned} planned case(s); {workers} xdist "
            f"worker{'s' if workers != 1 else ''} would not run them sooner on "
            f"{where} (a case costs workers about {WORKER_CPU_FACTOR:g}x its CPU "
            "in process)",
            by_work=True,
            planned=planned,
        )
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
    "CASE_S",
    "IN_PROCESS_UP_TO",
    "WORKER_CPU_FACTOR",
    "WORKER_FIXED_S",
    "WorkerChoice",
    "available_cores",
    "choose_workers",
    "default_workers",
    "given_workers",
    "in_process_limit",
    "workers_for",
]
