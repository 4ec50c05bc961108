"""Per-case cost of isolation: in process, warm pool, and one fresh interpreter per case.

Two entries: a trivial one (the pure overhead of each way of running a case) and one
whose module imports torch (what a real backend child pays to start). The warm pool
should cost about a pipe round trip; a fresh interpreter pays the full import.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from run import BenchRow
from torchcts_isolate import WarmPool, run_isolated

AREA = "isolate"
ENTRIES = textwrap.dedent(
    """
    def trivial(payload):
        return {"case_id": payload["case_id"], "status": "passed"}
    """
)
TORCH_ENTRIES = textwrap.dedent(
    """
    import torch

    def add(payload):
        if payload.get("crash"):
            import ctypes
            ctypes.string_at(0)
        x = torch.ones(8)
        return {"case_id": payload["case_id"], "sum": float((x + x).sum())}
    """
)


def _per_case(run_one: Callable[[int], object], count: int) -> float:
    start = time.perf_counter()
    for n in range(count):
        run_one(n)
    return (time.perf_counter() - start) / count


def _median_of(run_one: Callable[[int], object], count: int) -> float:
    times = []
    for n in range(count):
        start = time.perf_counter()
        run_one(n)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def rows() -> list[BenchRow]:
    """Measure each way of running a case; see the module docstring."""
    out: list[BenchRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "bench_iso_trivial.py").write_text(ENTRIES, encoding="utf-8")
        Path(tmp, "bench_iso_torch.py").write_text(TORCH_ENTRIES, encoding="utf-8")
        sys.path.insert(0, tmp)
        env = {"PYTHONPATH": tmp}
        try:
            import bench_iso_trivial

            def inline(n: int) -> object:
                return bench_iso_trivial.trivial({"case_id": str(n)})

            out.append(row("in process, trivial case", _per_case(inline, 10000)))
            with WarmPool("bench_iso_trivial:trivial", env=env) as pool:
                pool.run({"case_id": "warm"}, timeout_s=60, heartbeat_s=30)

                def warm(n: int) -> object:
                    return pool.run({"case_id": str(n)}, timeout_s=60, heartbeat_s=30)

                out.append(row("warm pool, trivial case", _per_case(warm, 500)))

            def fresh(n: int) -> object:
                return run_isolated(
                    "bench_iso_trivial:trivial",
                    {"case_id": str(n)},
                    timeout_s=60,
                    heartbeat_s=30,
                    memory_mb=None,
                    env=env,
                )

            out.append(row("fresh interpreter, trivial case", _per_case(fresh, 20)))
            out += _torch_rows(env)
        finally:
            sys.path.remove(tmp)
    return out


def _torch_rows(env: dict[str, str]) -> list[BenchRow]:
    out = []
    with WarmPool("bench_iso_torch:add", env=env) as pool:
        first = time.perf_counter()
        pool.run({"case_id": "warm"}, timeout_s=300, heartbeat_s=60)
        out.append(
            row("warm pool start (imports torch)", time.perf_counter() - first, "s")
        )

        def warm(n: int) -> object:
            return pool.run({"case_id": str(n)}, timeout_s=60, heartbeat_s=30)

        out.append(row("warm pool, torch case", _per_case(warm, 300)))

    def fresh(n: int) -> object:
        return run_isolated(
            "bench_iso_torch:add",
            {"case_id": str(n)},
            timeout_s=300,
            heartbeat_s=60,
            memory_mb=None,
            env=env,
        )

    out.append(row("fresh interpreter, torch case", _median_of(fresh, 3), "s"))
    for size in (1, 2):
        with WarmPool("bench_iso_torch:add", env=env, size=size) as pool:
            pool.run({"case_id": "warm"}, timeout_s=300, heartbeat_s=60)
            time.sleep(3)  # let spares finish importing

            def crash_then_case(n: int, pool: WarmPool = pool) -> object:
                pool.run(
                    {"case_id": str(n), "crash": True}, timeout_s=60, heartbeat_s=30
                )
                return pool.run({"case_id": str(n)}, timeout_s=300, heartbeat_s=60)

            out.append(
                row(
                    f"segfault + next case, pool size {size}",
                    _median_of(crash_then_case, 1),
                    "s",
                    "a spare child takes over" if size > 1 else "waits for a restart",
                )
            )
    return out


def row(metric: str, seconds: float, unit: str = "ms", note: str = "") -> BenchRow:
    """A BenchRow in ms (default) or s."""
    value = seconds * 1000 if unit == "ms" else seconds
    return BenchRow(
        AREA, metric, value, f"{unit}/case" if "case" in metric else unit, note
    )
