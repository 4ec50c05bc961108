"""Run every ``bench/bench_*.py`` module and print one table.

Each module defines ``rows() -> list[BenchRow]``. Benchmarks measure, they never assert:
speed is a product feature tracked here, not a flaky timed test.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from pathlib import Path
from typing import NamedTuple


class BenchRow(NamedTuple):
    """One line of the table: which area, what was measured, the value, and its unit."""

    area: str
    metric: str
    value: float
    unit: str
    note: str = ""


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
    wanted = set(argv)
    rows: list[BenchRow] = []
    failed = False
    for path in sorted(here.glob("bench_*.py")):
        if wanted and path.stem.removeprefix("bench_") not in wanted:
            continue
        start = time.perf_counter()
        try:
            rows.extend(_load(path).rows())  # type: ignore[attr-defined]
        except Exception:
            failed = True
            traceback.print_exc()
            rows.append(
                BenchRow(path.stem, "FAILED", float("nan"), "", "see traceback")
            )
        print(f"# {path.name}: {time.perf_counter() - start:.1f}s", file=sys.stderr)
    widths = [max(len(r[i]) for r in [_head(), *map(_cells, rows)]) for i in range(5)]
    for cells in [_head(), *map(_cells, rows)]:
        print(
            "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
        )
    return 1 if failed else 0


def _head() -> tuple[str, ...]:
    return ("area", "metric", "value", "unit", "note")


def _cells(row: BenchRow) -> tuple[str, ...]:
    value = f"{row.value:.4g}" if isinstance(row.value, float) else str(row.value)
    return (row.area, row.metric, value, row.unit, row.note)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
