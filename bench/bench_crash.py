"""A crash-heavy slice: one op that segfaults on every sample, against the same slice
with no fault.

simdev with a fault profile written here (every call of ``aten::exp.out``, whatever
its dtype or shape, dereferences a null pointer) runs ``--op exp --op add --dtype
float32 --level 2``: every exp case crashes, every add case passes. The same
selection under simdev's clean profile is the yardstick; the two run in turns
(A B A B ...), with the workers chosen by the work (a small selection: in process,
continued with ``--resume`` after each crash that ends the process) and with two
xdist workers (a crash costs a worker). Rows: wall, CPU seconds, crashed cases, and
the cost of each crash (wall minus the clean run's, per crashed case, pair by pair).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from measure import load_average
from observe import RunObservation, checkout_like, observe
from run import BenchRow, spread_row
from torchcts_schema import JOURNAL_SUFFIX

AREA = "crash-heavy"
PROFILE = {
    "name": "bench-exp-segfault",
    "description": "exp dereferences a null pointer on every call (bench only)",
    "rules": [{"op": "aten::exp.out", "fault": "segfault", "note": "every exp call"}],
}
ARGS = ["--manifest", "manifests/simdev.py", "--op", "exp", "--op", "add"]
ARGS += ["--dtype", "float32", "--level", "2", "--quiet", "--no-fail"]
WAYS = {"default": [], "-n 2": ["-n", "2"]}


def crashed(results: Path) -> int:
    """Crashed cases in the journals under a results dir."""
    count = 0
    for journal in results.rglob(f"*{JOURNAL_SUFFIX}"):
        for line in journal.read_text(encoding="utf-8").splitlines():
            if '"status":"crashed"' in line:
                count += 1
    return count


def rows(options: argparse.Namespace) -> list[BenchRow]:
    """Crashing and clean slices, each way, in turns."""
    seen: dict[str, list[tuple[RunObservation, int]]] = {}
    loads = [load_average()]
    with tempfile.TemporaryDirectory(prefix="torchcts-bench-crash-") as tmp:
        workdir = checkout_like(Path(tmp))
        profile = workdir / "exp_segfault.json"
        profile.write_text(json.dumps(PROFILE), encoding="utf-8")
        profiles = {"crash": str(profile), "clean": "clean"}
        for _ in range(options.rounds):
            for way, extra in WAYS.items():
                for name, chosen in profiles.items():
                    env = {"TORCHCTS_SIMDEV_PROFILE": chosen}
                    run = observe([*ARGS, *extra], workdir=workdir, env=env)
                    count = crashed(workdir / "results")
                    seen.setdefault(f"{way} {name}", []).append((run, count))
                    loads += list(run.loads)
    out: list[BenchRow] = []
    for way in WAYS:
        crash, clean = seen[f"{way} crash"], seen[f"{way} clean"]
        for name, runs in (("crash", crash), ("clean", clean)):
            walls = [r.wall_s for r, _ in runs]
            note = f"{runs[-1][0].cases} cases, {runs[-1][1]} crashed; exit {runs[-1][0].exit_code}"
            out.append(
                spread_row(
                    AREA, f"{way}, {name}: wall", walls, "s", loads=loads, note=note
                )
            )
            cpu = [r.cpu_s for r, _ in runs]
            out.append(spread_row(AREA, f"{way}, {name}: CPU", cpu, "s", loads=loads))
        per_crash = [
            (r.wall_s - c.wall_s) / n if n else float("nan")
            for (r, n), (c, _) in zip(crash, clean, strict=True)
        ]
        out.append(
            spread_row(
                AREA,
                f"{way}: cost per crash",
                per_crash,
                "s",
                loads=loads,
                note="(crash wall - clean wall) / crashed, pair by pair",
            )
        )
    return out


__all__ = ["rows"]
