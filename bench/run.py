"""Run the ``bench/bench_*.py`` modules and print one table.

``python bench/run.py [MODULE ...] [--rounds N] [--levels 1,2,4] [--sizes 60,15,...]``
(``bin/nox -s bench -- ...``): MODULE names pick modules (``validation`` for
``bench_validation.py``; all by default); the options go to the modules that take
them. Each module defines ``rows() -> list[BenchRow]`` or ``rows(options)``.
Benchmarks measure, they never assert: speed is a product feature tracked here, not
a flaky timed test. Aims are printed beside the rows they concern, never checked.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from measure import load_text, spread
from observe import RunObservation


class BenchRow(NamedTuple):
    """One line of the table: which area, what was measured, the value, and its unit.

    ``shown`` is how the value is printed when it is more than one number (a median
    with its min-max); ``value`` stays the plain figure.
    """

    area: str
    metric: str
    value: float
    unit: str
    note: str = ""
    shown: str = ""


def spread_row(
    area: str,
    metric: str,
    values: Sequence[float],
    unit: str,
    *,
    loads: Sequence[float],
    aim: str = "",
    note: str = "",
    digits: int = 2,
) -> BenchRow:
    """A row of several measurements: median (min-max), the aim, the load seen."""
    measured = spread(values)
    notes = [n for n in (note, f"aim {aim}" if aim else "", load_text(loads)) if n]
    return BenchRow(
        area, metric, measured.median, unit, "; ".join(notes), measured.text(digits)
    )


def start_rows(
    area: str, name: str, runs: Sequence[RunObservation], loads: Sequence[float]
) -> list[BenchRow]:
    """Where a run's start went: time to first case, the CPU seconds its processes
    had used by then and how many of them had loaded torch (steadier than the wall
    figure on a loaded machine)."""

    def row(metric: str, values: list[float], unit: str, **kw: Any) -> BenchRow:
        return spread_row(area, f"{name}: {metric}", values, unit, loads=loads, **kw)

    return [
        row("time to first case", [r.first_case_s for r in runs], "s", aim="<= 5 s"),
        row(
            "CPU to first case",
            [r.first_case_cpu_s for r in runs],
            "s",
            note="user+sys of the run's processes by its first case",
        ),
        row(
            "interpreters with torch by the first case",
            [float(r.torch_by_first_case) for r in runs],
            "processes",
            aim="the executing processes only",
            digits=0,
        ),
    ]


def parse(argv: list[str]) -> tuple[set[str], argparse.Namespace]:
    """Module names and the options the modules read."""
    parser = argparse.ArgumentParser(prog="bench/run.py")
    parser.add_argument("modules", nargs="*", help="bench_<NAME>.py to run (all)")
    parser.add_argument(
        "--rounds", type=int, default=2, help="turns per measurement (default 2)"
    )
    parser.add_argument(
        "--levels",
        default="1,2",
        help="validation levels (default 1,2; level 4 takes about 4-6 minutes a run "
        "on 2 cores and runs once: --levels 1,2,4)",
    )
    parser.add_argument(
        "--sizes",
        default="60,15,6,3,1",
        help="workers crossover: shard counts N of the 15-op slice (1/N of its "
        "3,530 cases each; default 60,15,6,3,1)",
    )
    options = parser.parse_args(argv)
    return set(options.modules), options


def _load(path: Path) -> object:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    """Run the selected benchmark modules (all by default) and print the table."""
    here = Path(__file__).parent
    sys.path.insert(0, str(here))
    wanted, options = parse(argv)
    known = {p.stem.removeprefix("bench_") for p in here.glob("bench_*.py")}
    unknown = sorted(wanted - known)
    if unknown:
        print(
            f"bench/run.py: no module bench_{unknown[0]}.py (have: {', '.join(sorted(known))})",
            file=sys.stderr,
        )
        return 2
    rows: list[BenchRow] = []
    failed = False
    for path in sorted(here.glob("bench_*.py")):
        if wanted and path.stem.removeprefix("bench_") not in wanted:
            continue
        start = time.perf_counter()
        try:
            make = _load(path).rows  # type: ignore[attr-defined]
            takes = len(inspect.signature(make).parameters)
            rows.extend(make(options) if takes else make())
        except Exception:
            failed = True
            traceback.print_exc()
            rows.append(
                BenchRow(path.stem, "FAILED", float("nan"), "", "see traceback")
            )
        print(f"# {path.name}: {time.perf_counter() - start:.1f}s", file=sys.stderr)
    table = [_head(), *map(_cells, rows)]
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    for cells in table:
        print(
            "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
        )
    return 1 if failed else 0


def _head() -> tuple[str, ...]:
    return ("area", "metric", "value", "unit", "note")


def _cells(row: BenchRow) -> tuple[str, ...]:
    if row.shown:
        value = row.shown
    elif isinstance(row.value, float):
        value = f"{row.value:.4g}"
    else:
        value = str(row.value)
    return (row.area, row.metric, value, row.unit, row.note)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
