"""Coverage: the case catalog's size per level and family, and what the coverage
audit costs cold (tracing) and cached (what `make run` pays to refresh coverage/).

A cold trace of the whole catalog is tens of CPU-minutes, too long for a bench: the
cold row traces every 200th (op, variant, dtype) group with all its samples in a
fresh process and an empty trace cache, and scales its CPU time per case to the
catalog (the note says so). The trace's own record of its build (CPU seconds over
the cases it holds) is printed beside it when a trace exists. Each child times
itself and prints JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from run import BenchRow

AREA = "coverage"
GROUP_STRIDE = 200
_COUNTS = """
import json
from collections import Counter
from torchcts_cases import coverage_trace
specs = coverage_trace.universe()
levels = Counter(s.level for s in specs)
families = Counter(s.variant if s.suite == "opinfo" else s.suite for s in specs)
by = {}
for s in specs:
    family = s.variant if s.suite == "opinfo" else s.suite
    by.setdefault(family, Counter())[s.level] += 1
print(json.dumps({"total": len(specs), "levels": levels, "families": families,
                  "by": by}))
"""
_COLD = """
import json, time
from torchcts_cases import coverage_trace
specs = coverage_trace.universe()
groups, seen = [], {{}}
for s in specs:
    key = s.case_id.rsplit("/", 1)[0]
    if key not in seen:
        seen[key] = len(seen)
    if seen[key] % {stride} == 0:
        groups.append(s)
cpu = coverage_trace._manifest()
coverage_trace.reached_by(groups[0], cpu)  # op_db import, once per process
t0, c0 = time.perf_counter(), time.process_time()
for s in groups:
    coverage_trace.reached_by(s, cpu)
print(json.dumps({{"n": len(groups), "wall": time.perf_counter() - t0,
                   "cpu": time.process_time() - c0, "universe": len(specs)}}))
"""
_CACHED = """
import json, time
t0 = time.perf_counter()
from torchcts_cases import coverage, coverage_trace
trace = coverage_trace.load()
t1 = time.perf_counter()
if trace is None:
    print(json.dumps({{}}))
else:
    line = coverage.refresh({results!r})
    t2 = time.perf_counter()
    print(json.dumps({{"load": t1 - t0, "refresh": t2 - t1, "line": line,
                       "traced": sum(1 for _ in trace.traced()),
                       "complete": trace.complete, "cpu_s": trace.cpu_seconds}}))
"""


def _child(code: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def rows() -> list[BenchRow]:
    """Case counts per level and family; cold and cached audit cost."""
    counts = _child(_COUNTS)
    out = [BenchRow(AREA, "cases in the catalog", float(counts["total"]), "cases")]
    levels: dict[str, int] = counts["levels"]
    for level in sorted(levels, key=int):
        out.append(BenchRow(AREA, f"cases at level {level}", levels[level], "cases"))
    by: dict[str, dict[str, int]] = counts["by"]
    families: dict[str, int] = counts["families"]
    for family in sorted(families, key=lambda f: -families[f]):
        per = by[family]
        note = " ".join(f"L{k}:{per[k]}" for k in sorted(per, key=int))
        out.append(
            BenchRow(AREA, f"cases of {family}", families[family], "cases", note)
        )
    with tempfile.TemporaryDirectory() as tmp:
        cold = _child(_COLD.format(stride=GROUP_STRIDE))
        cached = _child(_CACHED.format(results=str(Path(tmp) / "results")))
    n, universe = int(cold["n"]), int(cold["universe"])
    per_case = float(cold["cpu"]) / n
    out += [
        BenchRow(
            AREA,
            "cold trace, CPU per case",
            per_case * 1000,
            "ms",
            f"{n} cases: every {GROUP_STRIDE}th group, all samples",
        ),
        BenchRow(
            AREA,
            "cold trace of the catalog, extrapolated",
            per_case * universe / 60,
            "CPU-min",
            f"{universe} cases x the CPU per case above",
        ),
    ]
    if cached:
        traced = int(cached["traced"])
        cpu_s = float(cached["cpu_s"])
        state = "complete" if cached["complete"] else "partial"
        out += [
            BenchRow(
                AREA,
                "trace build as recorded",
                cpu_s / 60,
                "CPU-min",
                f"{traced} cases traced ({state})",
            ),
            BenchRow(
                AREA,
                "cached trace: read",
                float(cached["load"]),
                "s",
                "fresh process, incl. imports",
            ),
            BenchRow(
                AREA,
                "cached audit: refresh results/coverage/",
                float(cached["refresh"]),
                "s",
                str(cached["line"]),
            ),
        ]
    else:
        out.append(
            BenchRow(AREA, "cached audit", float("nan"), "s", "no trace cached yet")
        )
    return out
