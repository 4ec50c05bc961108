"""Where workers start to pay: in process (-n 0) against two workers (-n 2), by size.

Shards of the 15-op slice at level 4 (``--shard 1/N`` of its 3,530 cases: a mix of
every op at each size), each size run with ``-n 0`` and with ``-n 2`` in turns
(A B A B ...), watched from outside. Rows per size: wall of each, the pairwise
ratio -n 2 / -n 0, CPU seconds of each. Then a least-squares line wall = fixed +
per case x cases for each way (over the sizes' medians), and where the two lines
cross: the planned-case count above which two workers finish sooner on this
machine, printed beside the boundary the runner uses for two workers
(``torchcts_runner.worker_choice.in_process_limit``: none on two workers, which
cost a case about twice its CPU; measured on the whole of level 4 too, see the
bench README). ``--sizes`` picks the shard counts (default 60,15,6,3,1: about 50,
200, 600, 1,200 and 3,530 cases).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench_slice import slice_args
from measure import load_average, pair_ratios, spread
from observe import RunObservation, checkout_like, observe
from run import BenchRow, spread_row

AREA = "workers"
WAYS = {"-n 0": ["-n", "0"], "-n 2": ["-n", "2"]}


def line_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y over x."""
    n = len(points)
    if n < 2:
        raise ValueError("a line needs two points")
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    if not sxx:
        raise ValueError("a line needs two different x")
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
    return mean_y - slope * mean_x, slope


def crossover(one: tuple[float, float], other: tuple[float, float]) -> float:
    """The x where two (intercept, slope) lines meet (inf: they never do ahead)."""
    (a0, b0), (a1, b1) = one, other
    if b0 <= b1:
        return float("inf")
    return (a1 - a0) / (b0 - b1)


def rows(options: argparse.Namespace) -> list[BenchRow]:
    """Each size in both ways, in turns; the fitted crossover."""
    from torchcts_runner.worker_choice import in_process_limit

    sizes = [int(v) for v in str(options.sizes).split(",") if v.strip()]
    seen: dict[tuple[int, str], list[RunObservation]] = {}
    loads: list[float] = [load_average()]
    with tempfile.TemporaryDirectory(prefix="torchcts-bench-workers-") as tmp:
        workdir = checkout_like(Path(tmp))
        for _ in range(options.rounds):
            for shards in sizes:
                for way, extra in WAYS.items():
                    args = slice_args(*extra, "--shard", f"1/{shards}")
                    run = observe(args, workdir=workdir)
                    seen.setdefault((shards, way), []).append(run)
                    loads += list(run.loads)
    out: list[BenchRow] = []
    medians: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
    for shards in sizes:
        serial, two = seen[(shards, "-n 0")], seen[(shards, "-n 2")]
        name = f"{serial[-1].cases} cases (1/{shards})"
        for way, runs in (("-n 0", serial), ("-n 2", two)):
            walls = [r.wall_s for r in runs]
            medians[way].append((float(serial[-1].cases), spread(walls).median))
            out.append(spread_row(AREA, f"{name}: {way} wall", walls, "s", loads=loads))
            cpu = [r.cpu_s for r in runs]
            out.append(spread_row(AREA, f"{name}: {way} CPU", cpu, "s", loads=loads))
        ratios = pair_ratios([r.wall_s for r in two], [r.wall_s for r in serial])
        note = "pair by pair; < 1: the workers pay"
        out.append(
            spread_row(
                AREA, f"{name}: -n 2 / -n 0 wall", ratios, "x", loads=loads, note=note
            )
        )
    if len(sizes) >= 2:
        fits = {way: line_fit(points) for way, points in medians.items()}
        for way, (fixed, slope) in fits.items():
            out.append(
                BenchRow(
                    AREA,
                    f"{way} fit: fixed + per case",
                    fixed,
                    "s",
                    f"{slope * 1000:.2f} ms per case",
                )
            )
        meet = crossover(fits["-n 0"], fits["-n 2"])
        limit = in_process_limit(2)
        boundary = "none (in process at any size)" if limit is None else str(limit)
        out.append(
            BenchRow(
                AREA,
                "crossover (fit): -n 2 sooner above",
                meet,
                "cases",
                f"the runner's boundary for 2 workers: {boundary}",
            )
        )
    return out


__all__ = ["crossover", "line_fit", "rows"]
