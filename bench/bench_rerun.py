"""The engineer's fix loop: one OpInfo case rerun end to end, as printed in a report.

A checkout-like directory (the repository's ``bin/`` launchers and ``manifests/``)
gets one seeding run of a small simdev slice (it leaves the probe table a rerun
reuses, and the failed cases' saved samples), then the printed rerun command of one
failing case (``bin/torchcts-run --manifest manifests/simdev.py 'torchcts::...'``,
timed as the ``torchcts_runner.cli`` it execs, so the bench needs no built
``.nox`` environment: in process, its own selection folder, outside cases counted,
the sample replayed without importing OpInfo), the same command with two xdist
workers (what a rerun cost before), and the rerun of a case that passed (it saved
no sample, so OpInfo is imported) are timed in turns (A B C A B C ...), ``--rounds``
times. Aim: the rerun <= 5 s on an idle 2-core machine; the load average is printed
beside each row.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from measure import in_turns, load_average
from observe import checkout_like, observe
from run import BenchRow, spread_row

CASE = "torchcts::opinfo/mul/forward/int64/0"  # wrong in simdev's demo profile
PASSED = "torchcts::opinfo/add/forward/int64/0"  # right in the demo profile


def _timed(cwd: Path, args: list[str]) -> float:
    """Wall seconds of one run in `cwd`, keeping its results (the seeding run's
    probe table and saved samples are what a rerun reuses); NaN when the run did
    not complete (exit other than 0 or 1)."""
    run = observe(
        ["--manifest", "manifests/simdev.py", *args],
        workdir=cwd,
        env={"TORCHCTS_SIMDEV_PROFILE": "demo"},
        keep=True,
    )
    return run.wall_s if run.exit_code in (0, 1) else float("nan")


def rows(options: argparse.Namespace) -> list[BenchRow]:
    """Median seconds of the one-case rerun, in process and with two workers."""
    loads = [load_average()]
    with tempfile.TemporaryDirectory(prefix="torchcts-bench-rerun-") as tmp:
        here = checkout_like(Path(tmp))
        _timed(here, ["--op", "mul", "--dtype", "int64"])  # seeds the probe cache
        loads.append(load_average())

        def step(args: list[str]) -> float:
            seconds = _timed(here, args)
            loads.append(load_average())
            return seconds

        seen = in_turns(
            {
                "rerun": lambda: step([CASE]),
                "xdist": lambda: step(["-n", "2", CASE]),
                "cold": lambda: step([PASSED]),
            },
            options.rounds,
        )
    return [
        spread_row(
            "rerun",
            "one OpInfo case, as printed",
            seen["rerun"],
            "s",
            loads=loads,
            aim="<= 5 s",
            digits=1,
        ),
        spread_row(
            "rerun",
            "the same with -n 2 (xdist)",
            seen["xdist"],
            "s",
            loads=loads,
            digits=1,
        ),
        spread_row(
            "rerun",
            "a passed case (nothing saved: OpInfo imported)",
            seen["cold"],
            "s",
            loads=loads,
            digits=1,
        ),
    ]
