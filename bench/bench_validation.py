"""CPU validation by level: each whole run against its own bare calls, in turns.

Per level, ``--rounds`` times in turn: the bare calls of the level's cases in this
process (``bare.py``: reference and op calls only), then the run
(``torchcts-run --manifest manifests/cpu.py --validation --level N``, workers chosen
by the work) watched from outside (``observe.py``). Rows per level:

- cases executed, wall, CPU seconds (the run and every process it waited for);
- time to first case (launch to the first executed case's journal line; aim <= 5 s),
  the CPU seconds the run's processes had used by then and how many of them had
  loaded torch (``proc_watch.py``: steadier than the wall figure on a loaded
  machine), and tail (the last case's journal line to the exit; aim <= 5 s);
- bare calls per core: their serial sum divided among the processes that ran the
  cases (``measure.per_core``), and wall / bare per core, pair by pair (aim <= 1.5x
  at level 4);
- the bare loop per core (the same cases' inputs built, called and judged in a plain
  loop: what any suite checking them pays before its own costs) and wall / bare loop;
- the case phase beyond the bare calls, per case: (wall - first case - tail - bare
  per core) / cases, from the same pair; negative only if this process's bare calls
  ran slower than the run's, which the note then says;
- artifact sizes (journal, history, latest snapshot or reference, reports, other).

Level 4 (about 105,000 cases, 4-6 minutes a run on 2 cores) runs only when asked
(``bin/nox -s bench -- validation --levels 1,2,4``), once whatever ``--rounds`` says.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from bare import BareCalls, bare_calls
from measure import cores, load_average, pair_ratios, per_core
from observe import ROOT, RunObservation, checkout_like, observe
from run import BenchRow, spread_row, start_rows

AREA = "validation"
LONG_LEVELS = (4, 5, 6, 7, 8)  # minutes a run: measured once


def rows(options: argparse.Namespace) -> list[BenchRow]:
    """The rows of every level asked for (default 1 and 2)."""
    levels = [int(v) for v in str(options.levels).split(",") if v.strip()]
    out: list[BenchRow] = []
    with tempfile.TemporaryDirectory(prefix="torchcts-bench-validation-") as tmp:
        workdir = checkout_like(Path(tmp))
        for level in levels:
            rounds = 1 if level in LONG_LEVELS else options.rounds
            out += level_rows(workdir, level, rounds)
    return out


def level_rows(workdir: Path, level: int, rounds: int) -> list[BenchRow]:
    """Bare calls and the run of one level, in turns; its rows."""
    bares: list[BareCalls] = []
    runs: list[RunObservation] = []
    loads: list[float] = []
    args = ["--manifest", "manifests/cpu.py", "--validation", "--level", str(level)]
    for _ in range(rounds):
        loads.append(load_average())
        bares.append(bare_calls(ROOT / "manifests" / "cpu.py", level=level))
        loads.append(load_average())
        runs.append(observe([*args, "--quiet"], workdir=workdir))
        loads += list(runs[-1].loads)
    return validation_rows(f"level {level}", bares, runs, loads, cores())


def validation_rows(
    name: str,
    bares: list[BareCalls],
    runs: list[RunObservation],
    loads: list[float],
    machine_cores: int,
) -> list[BenchRow]:
    """The rows of one selection from its paired bare calls and runs."""
    per = [
        per_core(b.total_s, r.processes, machine_cores)
        for b, r in zip(bares, runs, strict=True)
    ]
    loops = [
        per_core(b.loop_s, r.processes, machine_cores)
        for b, r in zip(bares, runs, strict=True)
    ]
    walls = [r.wall_s for r in runs]
    beyond = [
        (r.wall_s - r.first_case_s - r.tail_s - p) / r.cases * 1000
        if r.cases
        else float("nan")
        for r, p in zip(runs, per, strict=True)
    ]
    last = runs[-1]
    workers = f"{last.workers} workers" if last.workers else "in process"
    note = f"{workers} ({last.workers_why})" if last.workers_why else workers
    slower = min(beyond, default=0.0) < 0

    def row(metric: str, values: list[float], unit: str, **kw: Any) -> BenchRow:
        return spread_row(AREA, f"{name}: {metric}", values, unit, loads=loads, **kw)

    out = [
        row(
            "cases",
            [float(r.cases) for r in runs],
            "cases",
            note=f"exit {sorted({r.exit_code for r in runs})}",
            digits=0,
        ),
        row("wall", walls, "s", note=note),
        row(
            "CPU",
            [r.cpu_s for r in runs],
            "s",
            note="user+sys, the run and what it waited for",
        ),
        *start_rows(AREA, name, runs, loads),
        row("tail after the last case", [r.tail_s for r in runs], "s", aim="<= 5 s"),
        row(
            "bare calls per core",
            per,
            "s",
            note=f"serial sum / min(processes, {machine_cores} cores)",
        ),
        row(
            "wall / bare per core",
            pair_ratios(walls, per),
            "x",
            aim="<= 1.5x at level 4",
            note="pair by pair",
        ),
        row(
            "bare loop per core",
            loops,
            "s",
            note="inputs built, called and judged in a plain loop (bare.py)",
        ),
        row("wall / bare loop per core", pair_ratios(walls, loops), "x"),
        row(
            "case phase beyond bare calls",
            beyond,
            "ms/case",
            note="(wall - first case - tail - bare per core) / cases"
            + (
                "; negative: the bare calls here ran slower than the run's"
                if slower
                else ""
            ),
        ),
    ]
    sizes = last.artifacts
    out.append(
        BenchRow(
            AREA,
            f"{name}: artifacts",
            sum(sizes.values()) / 1e6,
            "MB",
            ", ".join(f"{k} {v / 1e6:.2f}" for k, v in sizes.items()),
        )
    )
    return out


__all__ = ["level_rows", "rows", "validation_rows"]
