"""The bench's arithmetic: medians with their spread, per-core sums, turn orders.

No torch, no subprocess: what a row says is computed here from plain numbers, so the
way a figure is made can be read (and is pinned by ``tests/test_bench_measure.py``)
apart from the runs that produce the numbers.

Honesty rules the rows follow:
- two things compared are measured in the same invocation, in turns (A B A B ...),
  and a ratio is taken pair by pair, so a load that drifts during the call moves
  both sides of each pair;
- a run that used several processes is compared with its bare calls divided among
  the processes it ran them in (``per_core``), never with their serial sum;
- every figure is a median with its min-max, and the machine's load average is
  printed beside it: a wide spread or a high load says the figure is noisy.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Spread:
    """The median of some measurements and their range."""

    median: float
    low: float
    high: float
    count: int

    def text(self, digits: int = 2) -> str:
        """``median (min-max)``, or the value alone for one measurement."""
        if self.count <= 1:
            return f"{self.median:.{digits}f}"
        return (
            f"{self.median:.{digits}f} ({self.low:.{digits}f}-{self.high:.{digits}f})"
        )


def spread(values: Sequence[float]) -> Spread:
    """Median, min and max; NaN for no values (a row that measured nothing says so)."""
    finite = [v for v in values if v == v]  # NaN marks a measurement that failed
    if not finite:
        nan = float("nan")
        return Spread(nan, nan, nan, 0)
    return Spread(statistics.median(finite), min(finite), max(finite), len(finite))


def pair_ratios(
    numerators: Sequence[float], denominators: Sequence[float]
) -> list[float]:
    """Ratios pair by pair (round i over round i); NaN where a pair cannot divide."""
    if len(numerators) != len(denominators):
        raise ValueError(
            f"{len(numerators)} numerators for {len(denominators)} denominators"
        )
    return [
        n / d if d else float("nan")
        for n, d in zip(numerators, denominators, strict=True)
    ]


def per_core(bare_total_s: float, processes: int, cores: int) -> float:
    """The bare calls' serial sum shared among the processes that ran them.

    A run with ``processes`` executing processes (xdist workers; 1 without xdist) on
    ``cores`` cores can at best divide its bare work by the smaller of the two; a
    wall time compared with the serial sum would flatter every parallel run.
    """
    if processes < 1 or cores < 1:
        raise ValueError(f"processes {processes} and cores {cores} must be >= 1")
    return bare_total_s / min(processes, cores)


def turns(names: Sequence[str], rounds: int) -> list[str]:
    """The order the measurements run in: every name once per round, in turn."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, not {rounds}")
    return [name for _ in range(rounds) for name in names]


def in_turns(steps: dict[str, Callable[[], T]], rounds: int) -> dict[str, list[T]]:
    """Run each step once per round in turn (A B A B ...); results by name, in order."""
    out: dict[str, list[T]] = {name: [] for name in steps}
    for name in turns(list(steps), rounds):
        out[name].append(steps[name]())
    return out


def load_average() -> float:
    """The one-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def load_text(loads: Sequence[float]) -> str:
    """``load 1.2-3.4``: the load averages seen around a row's measurements."""
    seen = [v for v in loads if v == v]
    if not seen:
        return "load ?"
    low, high = min(seen), max(seen)
    return (
        f"load {low:.1f}"
        if f"{low:.1f}" == f"{high:.1f}"
        else f"load {low:.1f}-{high:.1f}"
    )


def cores() -> int:
    """Processors this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


__all__ = [
    "Spread",
    "cores",
    "in_turns",
    "load_average",
    "load_text",
    "pair_ratios",
    "per_core",
    "spread",
    "turns",
]
