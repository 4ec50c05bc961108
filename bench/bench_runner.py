"""Runner overhead: a whole torchcts-run against the bare op and reference calls it makes.

Slice: OpInfo float32 forward cases at level 1 on cpu (validation). Rows:
- wall ratio: the whole run's wall time (torchcts-run, default workers) divided by the
  bare CPU reference + op calls of the same cases in one warm process (aim: <= 3x);
- per-case overhead: in-process run (-n 0), the cycle time between case starts in the
  runlog minus the bare calls of those cases, in milliseconds;
- time to first case: from launching torchcts-run to the first runlog start (aim < 10 s).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

from run import BenchRow

MANIFEST = """DEVICE = "cpu"
DTYPES = {"float32": True}
CAPABILITIES = ["forward"]
LEVEL = 1
MAX_SAMPLES_PER_OP = 1
"""


def _bare_seconds(manifest: Path) -> tuple[float, dict[str, float], int]:
    """Bare reference + op calls per case, in this (warm) process."""
    import torchcts_cases as cases
    from torchcts_schema import load_manifest

    loaded = load_manifest(manifest)
    runnable = cases.select_cases(loaded, cases.Selection()).runnable
    per_case: dict[str, float] = {}
    for spec in runnable:
        prepared = cases.prepare(spec, loaded)
        try:
            prepared.reference()  # warm: inputs and lazy imports are not the op's time
            start = time.perf_counter()
            prepared.reference()
            prepared.run_on("cpu")
            per_case[spec.case_id] = time.perf_counter() - start
        except Exception:
            per_case[spec.case_id] = 0.0
    return sum(per_case.values()), per_case, len(runnable)


def _run(
    workdir: Path, *extra: str
) -> tuple[float, float | None, list[tuple[float, str]]]:
    """Wall time, time to first start, and the runlog's (time, node id) starts."""
    import shutil

    shutil.rmtree(workdir / "results", ignore_errors=True)
    command = [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "m.py",
               "--validation", "--quiet", *extra]  # fmt: skip
    launched = time.time()
    subprocess.run(command, cwd=workdir, capture_output=True, check=False)
    wall = time.time() - launched
    starts = []
    for runlog in (workdir / "results").glob("*_runlog.txt"):
        for line in runlog.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[0].isdigit():
                moment = datetime.strptime(parts[1], "%Y-%m-%dT%H:%M:%S.%fZ")
                stamp = moment.replace(tzinfo=UTC).timestamp()
                starts.append((int(parts[0]), stamp, parts[3]))
    starts.sort()
    first = starts[0][1] - launched if starts and starts[0][0] == 1 else None
    return wall, first, [(s[1], s[2]) for s in starts]


def rows() -> list[BenchRow]:
    """Measure and return the runner's rows."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        manifest = workdir / "m.py"
        manifest.write_text(MANIFEST)
        bare, per_case, n = _bare_seconds(manifest)
        wall, _, _ = _run(workdir)
        _, _, starts = _run(workdir, "-n", "0")
        cycle = [b[0] - a[0] for a, b in pairwise(starts)]
        bare_of = [
            per_case.get(node.removeprefix("torchcts::"), 0.0)
            for _, node in starts[:-1]
        ]
        overhead = (sum(cycle) - sum(bare_of)) / len(cycle) if cycle else float("nan")
        _, first, _ = _run(workdir, "--op", "add")
    workers = os.cpu_count() or 1
    return [
        BenchRow(
            "runner",
            "cases in slice",
            float(n),
            "cases",
            "OpInfo float32 forward, level 1",
        ),
        BenchRow("runner", "bare op + reference calls", bare, "s", "one warm process"),
        BenchRow(
            "runner",
            "whole run wall",
            wall,
            "s",
            f"torchcts-run, {min(workers, 8)} workers",
        ),
        BenchRow(
            "runner",
            "wall / bare calls",
            wall / bare if bare else float("nan"),
            "x",
            "aim <= 3",
        ),
        BenchRow(
            "runner",
            "per-case overhead",
            overhead * 1000,
            "ms",
            "-n 0, runlog cycle minus bare",
        ),
        BenchRow(
            "runner",
            "time to first case",
            first if first is not None else float("nan"),
            "s",
            "aim < 10",
        ),
    ]
