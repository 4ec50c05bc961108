"""simdev with the clean profile agrees with a CPU validation run, case for case.

Both runs use the same manifest (only DEVICE and the backend import differ), so they
select the same cases; any status or case difference is either a simdev bug or a
limitation that belongs in simdev's README.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from torchcts_schema import Status, load_result

ROOT = Path(__file__).resolve().parent.parent
OPS = ["add", "sub", "mul", "div", "neg", "abs", "exp", "sin", "cos", "sum", "mean", "clamp", "where", "cat"]  # fmt: skip


def _run(manifest: Path, results: Path, *extra: str, env: dict[str, str]) -> None:
    op_args = [arg for op in OPS for arg in ("--op", op)]
    # two dtypes: level 1 runs the primitive ops in every declared dtype and variant
    op_args += ["--dtype", "float32", "--dtype", "int64"]
    command = [
        sys.executable, "-m", "torchcts_runner.cli", "--manifest", str(manifest),
        "--results", str(results), "-n", "0", "--quiet", "--isolate", "none",
        *op_args, *extra,
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_clean_simdev_matches_cpu_validation(tmp_path: Path) -> None:
    """Every case that ran on both has the same status, and both ran the same cases."""
    source = (ROOT / "manifests" / "simdev.py").read_text()
    cpu_source = re.sub(r'^DEVICE = "simdev"$', 'DEVICE = "cpu"', source, flags=re.M)
    cpu_source = re.sub(r"^BACKEND_(IMPORT|OPTIONS) = .*$", "", cpu_source, flags=re.M)
    cpu_manifest = tmp_path / "cpu_manifest.py"
    cpu_manifest.write_text(cpu_source)
    env = {**os.environ, "TORCHCTS_SIMDEV_PROFILE": "clean"}
    _run(ROOT / "manifests" / "simdev.py", tmp_path / "simdev", env=env)
    _run(cpu_manifest, tmp_path / "cpu", "--validation", env=env)
    # an --op slice is a subset run: it writes its own folder under selections/
    (simdev_dir,) = (tmp_path / "simdev" / "selections").iterdir()
    (cpu_dir,) = (tmp_path / "cpu" / "selections").iterdir()
    simdev = {r.case_id: r for r in load_result(simdev_dir).results}
    cpu = {r.case_id: r for r in load_result(cpu_dir).results}
    assert len(cpu) >= 30
    assert set(simdev) == set(cpu)
    differ = {
        case: (
            cpu[case].status,
            simdev[case].status,
            simdev[case].mismatch or simdev[case].exception_message,
        )
        for case in cpu
        if cpu[case].status != simdev[case].status
    }
    assert differ == {}
    assert all(r.status is Status.PASSED for r in cpu.values())
