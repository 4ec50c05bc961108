"""The engineer's fix loop: one OpInfo case rerun end to end, as printed in a report.

A checkout-like directory (the repository's ``bin/`` launchers and ``manifests/``)
gets one seeding run of a small simdev slice (it leaves the probe table a rerun
reuses, and the failed cases' saved samples), then the printed rerun command of one
failing case (``bin/torchcts-run --manifest manifests/simdev.py 'torchcts::...'``: in
process, its own selection folder, outside cases counted, the sample replayed without
importing OpInfo), the same command with two xdist workers (what a rerun cost
before), and the rerun of a case that passed (it saved no sample, so OpInfo is
imported) are timed in turns (A B C A B C ...). Aim: the rerun <= 5 s on an idle
2-core machine; the load average is printed beside each row.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from run import BenchRow

ROOT = Path(__file__).resolve().parent.parent
CASE = "torchcts::opinfo/mul/forward/int64/0"  # wrong in simdev's demo profile
PASSED = "torchcts::opinfo/add/forward/int64/0"  # right in the demo profile
ROUNDS = int(os.environ.get("TORCHCTS_BENCH_ROUNDS", "3"))


def _load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def _timed(cwd: Path, args: list[str]) -> float:
    env = {**os.environ, "TORCHCTS_SIMDEV_PROFILE": "demo"}
    start = time.perf_counter()
    subprocess.run(
        ["bin/torchcts-run", "--manifest", "manifests/simdev.py", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


def rows() -> list[BenchRow]:
    """Median seconds of the one-case rerun, in process and with two workers."""
    with tempfile.TemporaryDirectory(prefix="torchcts-bench-rerun-") as tmp:
        here = Path(tmp)
        (here / "bin").symlink_to(ROOT / "bin")
        (here / "manifests").symlink_to(ROOT / "manifests")
        _timed(here, ["--op", "mul", "--dtype", "int64"])  # seeds the probe cache
        rerun: list[float] = []
        xdist: list[float] = []
        cold: list[float] = []
        for _ in range(ROUNDS):
            rerun.append(_timed(here, [CASE]))
            xdist.append(_timed(here, ["-n", "2", CASE]))
            cold.append(_timed(here, [PASSED]))
        load = _load()
    return [
        BenchRow(
            "rerun",
            "one OpInfo case, as printed",
            statistics.median(rerun),
            "s",
            f"min {min(rerun):.1f} max {max(rerun):.1f}, aim <= 5 s; load {load}",
        ),
        BenchRow(
            "rerun",
            "the same with -n 2 (xdist)",
            statistics.median(xdist),
            "s",
            f"min {min(xdist):.1f} max {max(xdist):.1f}; load {load}",
        ),
        BenchRow(
            "rerun",
            "a passed case (nothing saved: OpInfo imported)",
            statistics.median(cold),
            "s",
            f"min {min(cold):.1f} max {max(cold):.1f}; load {load}",
        ),
    ]
