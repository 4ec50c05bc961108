"""Case generation costs: listing the full OpInfo matrix cold and warm, get_case in a
fresh process, per-case overhead of prepare/reference/run_on/judge on CPU, building
consecutive samples in one process, and selecting the simdev manifest's matrix.

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
_SAMPLES = """
import json, time
from torchcts_schema import load_manifest
from torchcts_cases import prepare
from torchcts_cases.catalog import group_specs, opinfo_groups
from torchcts_cases.opinfo_source import op_table
m = load_manifest({manifest!r})
groups = [g for g in opinfo_groups("float32") if g[2] == "forward"][:{ops}]
specs = [s for op, e, v, n in groups for s in group_specs(op, e, v, "float32", range(n))]
op_table()  # op_db import, once per process
t0 = time.perf_counter()
for spec in specs:
    prepare(spec, m).item()
print(json.dumps({{"per_s": len(specs) / (time.perf_counter() - t0), "n": len(specs)}}))
"""
_SIMDEV = """
import json, time
from torchcts_schema import load_manifest
from torchcts_cases import Selection, select_cases
m = load_manifest({manifest!r})
select_cases(m, Selection(level=1))  # index shards loaded, once per process
times = []
for _ in range(3):
    t0 = time.perf_counter()
    s = select_cases(m, Selection(level=1))
    times.append(time.perf_counter() - t0)
    del s
s = select_cases(m, Selection(level=1))
print(json.dumps({{"select": min(times), "runnable": len(s.runnable),
                  "not_run": len(s.not_run)}}))
"""
_SAMPLE_OPS = 100
_SIMDEV_MANIFEST = Path(__file__).resolve().parent.parent / "manifests" / "simdev.py"


def _child(code: str, cache: Path | None) -> dict[str, float]:
    """Run `code` in a fresh interpreter; `cache` None: the user's case index cache."""
    env = dict(os.environ)
    if cache is not None:
        env["TORCHCTS_CACHE_DIR"] = str(cache)
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
    """Listing, get_case, per-case overhead, consecutive samples, simdev selection."""
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
        samples = _child(
            _SAMPLES.format(manifest=str(manifest), ops=_SAMPLE_OPS), cache
        )
        # every dtype simdev declares: cold shards cost minutes, so the user's cache
        simdev = _child(_SIMDEV.format(manifest=str(_SIMDEV_MANIFEST)), None)
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
        BenchRow(
            AREA,
            f"prepare all float32 forward samples of {_SAMPLE_OPS} ops in order",
            samples["per_s"],
            "cases/s",
            f"{int(samples['n'])} cases, one process",
        ),
        BenchRow(
            AREA,
            "select_cases simdev level 1 (warm)",
            simdev["select"],
            "s",
            f"{int(simdev['runnable'])} runnable, {int(simdev['not_run'])} not_run",
        ),
    ]
