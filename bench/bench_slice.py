"""The 15-op slice at level 4 (3,530 cases on torch 2.13): the fix loop's everyday run.

``torchcts-run --manifest manifests/cpu.py --validation --level 4 --op abs --op add
... --op topk`` with the workers chosen by the work, with ``-n 0`` and with ``-n 2``,
and the slice's bare calls (``bare.py``), all in turns (A B C D A B C D ...), watched
from outside (``observe.py``). Rows per way of running it: wall (aim: <= 10 s end to
end), CPU seconds, time to first case (with the CPU seconds and the interpreters
with torch by then), tail after the last case, wall / bare calls
per core (pair by pair), and which workers the run chose and why.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bare import BareCalls, bare_calls
from measure import cores, load_average, pair_ratios, per_core
from observe import ROOT, RunObservation, checkout_like, observe
from run import BenchRow, spread_row, start_rows

AREA = "15-op slice"
SLICE_OPS = ("abs", "add", "mul", "sum", "mean", "exp", "sin", "matmul", "mm")
SLICE_OPS += ("softmax", "cat", "where", "clamp", "sort", "topk")
LEVEL = 4
WAYS = {"default": [], "-n 0": ["-n", "0"], "-n 2": ["-n", "2"]}


def slice_args(*extra: str) -> list[str]:
    """The slice's torchcts-run arguments (validation on the CPU)."""
    ops = [word for op in SLICE_OPS for word in ("--op", op)]
    head = ["--manifest", "manifests/cpu.py", "--validation", "--level", str(LEVEL)]
    return [*head, *ops, *extra, "--quiet"]


def rows(options: argparse.Namespace) -> list[BenchRow]:
    """Every way of running the slice, in turns with its bare calls."""
    bares: list[BareCalls] = []
    runs: dict[str, list[RunObservation]] = {way: [] for way in WAYS}
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="torchcts-bench-slice-") as tmp:
        workdir = checkout_like(Path(tmp))
        for _ in range(options.rounds):
            loads.append(load_average())
            bares.append(
                bare_calls(
                    ROOT / "manifests" / "cpu.py", level=LEVEL, op_globs=SLICE_OPS
                )
            )
            for way, extra in WAYS.items():
                runs[way].append(observe(slice_args(*extra), workdir=workdir))
                loads += list(runs[way][-1].loads)
    out = [
        spread_row(
            AREA,
            "bare calls (serial sum)",
            [b.total_s for b in bares],
            "s",
            loads=loads,
            note=f"{bares[-1].cases} cases, reference + op calls",
        )
    ]
    for way, seen in runs.items():
        out += way_rows(way, seen, bares, loads)
    return out


def way_rows(
    way: str, seen: list[RunObservation], bares: list[BareCalls], loads: list[float]
) -> list[BenchRow]:
    """The rows of one way of running the slice."""
    walls = [r.wall_s for r in seen]
    per = [
        per_core(b.total_s, r.processes, cores())
        for b, r in zip(bares, seen, strict=True)
    ]
    last = seen[-1]
    chose = f"{last.workers} worker(s)" if last.workers else "in process"

    def row(metric: str, values: list[float], unit: str, **kw: str) -> BenchRow:
        return spread_row(AREA, f"{way}: {metric}", values, unit, loads=loads, **kw)

    return [
        row(
            "wall",
            walls,
            "s",
            aim="<= 10 s end to end",
            note=f"{last.cases} cases, {chose}: {last.workers_why}",
        ),
        row("CPU", [r.cpu_s for r in seen], "s"),
        *start_rows(AREA, way, seen, loads),
        row("tail after the last case", [r.tail_s for r in seen], "s"),
        row("wall / bare per core", pair_ratios(walls, per), "x", note="pair by pair"),
    ]


__all__ = ["LEVEL", "SLICE_OPS", "rows", "slice_args"]
