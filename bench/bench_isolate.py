"""Per-case cost of isolation: in process, warm pool, and one fresh interpreter per case;
and a whole run with ``--isolate all`` against the default.

Two entries: a trivial one (the pure overhead of each way of running a case) and one
whose module imports torch (what a real backend child pays to start). The warm pool
should cost about a pipe round trip; a fresh interpreter pays the full import.

The run rows: ``torchcts-run --manifest manifests/cpu.py --validation --op add --op
mul --level 2 -n 0`` (about 130 cases) with ``--isolate all`` and with the default,
in turns (A B A B ...), watched from outside: wall and CPU seconds of each and
their ratios pair by pair (aim: all <= 1.2x default).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from measure import in_turns, load_average, pair_ratios
from observe import checkout_like, observe
from run import BenchRow, spread_row
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


RUN_ARGS = ["--manifest", "manifests/cpu.py", "--validation", "--op", "add"]
RUN_ARGS += ["--op", "mul", "--level", "2", "-n", "0", "--quiet"]


def rows(options: argparse.Namespace) -> list[BenchRow]:
    """Measure each way of running a case, then the runs; see the module docstring."""
    return [*_case_rows(), *run_rows(options.rounds)]


def run_rows(rounds: int) -> list[BenchRow]:
    """``--isolate all`` against the default on one small slice, in turns."""
    loads = [load_average()]
    with tempfile.TemporaryDirectory(prefix="torchcts-bench-isolate-") as tmp:
        workdir = checkout_like(Path(tmp))
        seen = in_turns(
            {
                "all": lambda: observe(
                    [*RUN_ARGS, "--isolate", "all"], workdir=workdir
                ),
                "default": lambda: observe(RUN_ARGS, workdir=workdir),
            },
            rounds,
        )
    for runs in seen.values():
        for run in runs:
            loads += list(run.loads)
    out = []
    for name, runs in seen.items():
        note = f"{runs[-1].cases} cases, exit {runs[-1].exit_code}"
        walls = [r.wall_s for r in runs]
        out.append(
            spread_row(AREA, f"run, {name}: wall", walls, "s", loads=loads, note=note)
        )
        cpu = [r.cpu_s for r in runs]
        out.append(spread_row(AREA, f"run, {name}: CPU", cpu, "s", loads=loads))
    for what in ("wall_s", "cpu_s"):
        ratios = pair_ratios(
            [getattr(r, what) for r in seen["all"]],
            [getattr(r, what) for r in seen["default"]],
        )
        label = what.removesuffix("_s").replace("cpu", "CPU")
        out.append(
            spread_row(
                AREA,
                f"run, all / default {label}",
                ratios,
                "x",
                loads=loads,
                aim="<= 1.2x",
                note="pair by pair",
            )
        )
    return out


def _case_rows() -> list[BenchRow]:
    """Each way of running one case (in process, warm pool, fresh interpreter)."""
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
