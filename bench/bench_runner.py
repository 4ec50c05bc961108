"""Runner overhead: a whole torchcts-run against the bare op and reference calls it makes.

Two slices of OpInfo float32 forward cases on cpu (validation):
- the whole matrix (every op and sample at level 8: what the issue's ratio is about):
  the run's wall time (torchcts-run, default workers) divided by the bare CPU
  reference + op calls of the same cases in one warm process (aim: <= 3x);
- a small slice (level 1, one sample per op) for the fixed costs: per-case overhead
  (in-process run, -n 0: the cycle between case starts in the runlog minus the bare
  calls of those cases) and time to first case (launch to the first runlog start,
  aim < 10 s).
Set TORCHCTS_BENCH_QUICK=1 to skip the whole-matrix rows (minutes on 2 cores).
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
WHOLE_MATRIX = """DEVICE = "cpu"
DTYPES = {"float32": True}
CAPABILITIES = ["forward"]
LEVEL = 8
"""


def _bare_seconds(manifest: Path) -> tuple[float, dict[str, float], int]:
    """Bare reference + op calls per case, in this (warm) process."""
    import torchcts_cases as cases
    from torchcts_schema import load_manifest

    loaded = load_manifest(manifest)
    runnable = cases.select_cases(loaded, cases.Selection()).runnable
    per_case: dict[str, float] = {}
    for spec in runnable:
        if spec.variant != "forward":
            continue
        prepared = cases.prepare(spec, loaded)
        try:
            build_inputs = getattr(prepared, "item", None)
            if callable(build_inputs):
                build_inputs()  # the sample generator's work is not an op call
            start = time.perf_counter()
            prepared.reference()  # the CPU reference call (not cached yet)
            prepared.run_on("cpu")  # the op on the device under test
            per_case[spec.case_id] = time.perf_counter() - start
        except Exception:
            per_case[spec.case_id] = 0.0
    return sum(per_case.values()), per_case, len(per_case)


def _run(
    workdir: Path, *extra: str, manifest: str = "m.py"
) -> tuple[float, float | None, list[tuple[float, str]]]:
    """Wall time, time to first start, and the runlog's (time, node id) starts."""
    import shutil

    shutil.rmtree(workdir / "results", ignore_errors=True)
    command = [sys.executable, "-m", "torchcts_runner.cli", "--manifest", manifest,
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


def _whole_matrix(workdir: Path) -> list[BenchRow]:
    manifest = workdir / "whole.py"
    manifest.write_text(WHOLE_MATRIX)
    bare, _, n = _bare_seconds(manifest)
    wall, _, _ = _run(workdir, "--suite", "opinfo", manifest="whole.py")
    note = f"{n} cases, {min(os.cpu_count() or 1, 8)} workers"
    return [
        BenchRow("runner", "whole matrix: bare calls", bare, "s", note),
        BenchRow("runner", "whole matrix: run wall", wall, "s", note),
        BenchRow("runner", "whole matrix: wall / bare", wall / bare if bare else float("nan"), "x", "aim <= 3"),
    ]  # fmt: skip


def _guard_row() -> BenchRow:
    """One case's in-process deadline guard (alarm, watchdog, faulthandler backstop),
    armed and disarmed 100,000 times around nothing."""
    from torchcts_runner.timeouts import case_deadline

    count = 100_000
    with tempfile.TemporaryFile("w+") as backstop:
        start = time.perf_counter()
        for _ in range(count):
            with case_deadline(60.0, lambda: None, backstop):
                pass
        per = (time.perf_counter() - start) / count
    note = (
        "one long-lived watchdog and one faulthandler backstop armed for many cases "
        "(was 352-371 us with the backstop armed and cancelled per case)"
    )
    return BenchRow("runner", "deadline guard arm+disarm", per * 1e6, "us", note)


def rows() -> list[BenchRow]:
    """Measure and return the runner's rows."""
    out: list[BenchRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if not os.environ.get("TORCHCTS_BENCH_QUICK"):
            out += _whole_matrix(workdir)
        manifest = workdir / "m.py"
        manifest.write_text(MANIFEST)
        bare, per_case, n = _bare_seconds(manifest)
        wall, _, _ = _run(workdir, "--suite", "opinfo")
        _, _, starts = _run(workdir, "--suite", "opinfo", "-n", "0")
        cycle = [b[0] - a[0] for a, b in pairwise(starts)]
        bare_of = [
            per_case.get(node.removeprefix("torchcts::"), 0.0)
            for _, node in starts[:-1]
        ]
        overhead = (sum(cycle) - sum(bare_of)) / len(cycle) if cycle else float("nan")
        _, first, _ = _run(workdir, "--op", "add")
    workers = min(os.cpu_count() or 1, 8)
    return [
        *out,
        _guard_row(),
        BenchRow("runner", "small slice: cases", float(n), "cases", "level 1, 1 sample per op"),
        BenchRow("runner", "small slice: bare calls", bare, "s", "one warm process"),
        BenchRow("runner", "small slice: run wall", wall, "s", f"{workers} workers: fixed costs dominate"),
        BenchRow("runner", "per-case overhead", overhead * 1000, "ms", "-n 0, runlog cycle minus bare"),
        BenchRow("runner", "time to first case", first if first is not None else float("nan"), "s", "aim < 10"),
    ]  # fmt: skip
