"""Case generation costs: listing the full OpInfo matrix cold and warm, get_case in a
fresh process, and per-case overhead of prepare/reference/run_on/judge on CPU.

Cold and warm listings run in child processes (a fresh interpreter is what a user and
an xdist worker pay); each child times itself and prints JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from run import BenchRow

AREA = "cases"
_LIST = """
import json, time
t0 = time.perf_counter()
import torch
from torchcts_schema import load_manifest
from torchcts_cases import Selection, select_cases
t1 = time.perf_counter()
m = load_manifest({manifest!r})
s = select_cases(m, Selection(level=8))
t2 = time.perf_counter()
s = select_cases(m, Selection(level=1))
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "select8": t2 - t1, "select1": t3 - t2,
                  "cases": len(s.runnable) + len(s.not_run), "level1": len(s.runnable)}}))
"""
_GET = """
import json, time
t0 = time.perf_counter()
from torchcts_cases import get_case
spec = get_case("opinfo/add/forward/float32/0")
print(json.dumps({"get_case": time.perf_counter() - t0}))
"""
_EXEC = """
import json, time
from torchcts_schema import load_manifest
from torchcts_cases import Selection, prepare, select_cases
m = load_manifest({manifest!r})
specs = select_cases(m, Selection(level=1, suites=("opinfo",))).runnable[:300]
prepare(specs[0], m).reference()  # op_db import, once per process
t0 = time.perf_counter()
for spec in specs:
    case = prepare(spec, m)
    case.judge(case.reference(), case.run_on("cpu"))
print(json.dumps({{"per_case": (time.perf_counter() - t0) / len(specs), "n": len(specs)}}))
"""


def _child(code: str, cache: Path) -> dict[str, float]:
    env = {**os.environ, "TORCHCTS_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def rows() -> list[BenchRow]:
    """List cold and warm (float32 matrix), get_case, per-case execution overhead."""
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "manifest.py"
        manifest.write_text(
            'DEVICE = "cpu"\nDTYPES = {"float32": True}\n'
            'CAPABILITIES = ["forward", "method", "inplace", "out", "backward", '
            '"error_inputs", "noncontiguous"]\n'
        )
        cache = Path(tmp) / "cache"
        cold = _child(_LIST.format(manifest=str(manifest)), cache)
        warm = _child(_LIST.format(manifest=str(manifest)), cache)
        get = _child(_GET, cache)
        run = _child(_EXEC.format(manifest=str(manifest)), cache)
    n = int(warm["cases"])
    return [
        BenchRow(
            AREA, "list float32 matrix, cold cache", cold["select8"], "s", f"{n} cases"
        ),
        BenchRow(
            AREA, "list float32 matrix, warm cache", warm["select8"], "s", f"{n} cases"
        ),
        BenchRow(AREA, "cold / warm listing", cold["select8"] / warm["select8"], "x"),
        BenchRow(
            AREA,
            "select level 1 (warm)",
            warm["select1"],
            "s",
            f"{int(warm['level1'])} runnable",
        ),
        BenchRow(AREA, "import torch + torchcts_cases", warm["import"], "s"),
        BenchRow(
            AREA, "get_case in a fresh process", get["get_case"], "s", "incl. imports"
        ),
        BenchRow(
            AREA,
            "per-case prepare+reference+run_on+judge (cpu)",
            run["per_case"] * 1000,
            "ms",
            f"{int(run['n'])} level-1 cases",
        ),
    ]
