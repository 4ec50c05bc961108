"""Intra-op threads for xdist workers: each gets its share of the cores, not all of them.

torch sizes its OpenMP and MKL pools to every core of the machine in every process.
W workers on C cores then run W x C pool threads whose spin-waiting competes with
the work: on the 2-core development machine two workers each spent twice the CPU a
case costs in process (CPU validation level 4, 105,408 cases: workers 214 and 206
CPU-s, in process ~200 for all of them; a run 322 s wall against 178 in process).
With one thread each: 109 and 107 CPU-s, 184 s wall. A loop of small matmuls in two
processes at once took 3.6x the CPU it takes with one-thread pools; in three at
once, 27x the CPU of one process alone.

So a worker gets ``cores // workers`` threads (at least one), set through the
variables OpenMP and MKL read when torch loads, in the worker's environment as xdist
starts it (execnet's ``env:`` of the worker spec), so the worker, and the warm
pool children it starts, load torch with them. A variable the user set (in the
environment or a ``--tx ...//env:`` spec) is kept. A run in process keeps torch's
default: there the pool uses cores nothing else runs on. No torch, no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def threads_per_worker(workers: int, cores: int) -> int:
    """Each worker's share of the cores, at least one thread."""
    return max(1, cores // max(1, workers))


def share_cores(
    spec_env: MutableMapping[str, str],
    environ: Mapping[str, str],
    threads: int,
) -> dict[str, str]:
    """Set `threads` in one worker spec's environment for each thread variable that
    neither the spec nor the controller's environment (`environ`) sets; returns
    what was set."""
    added = {
        name: str(threads)
        for name in THREAD_VARIABLES
        if name not in spec_env and name not in environ
    }
    spec_env.update(added)
    return added


__all__ = ["THREAD_VARIABLES", "share_cores", "threads_per_worker"]
