"""torchcts-report works on a machine without torch: rendering never imports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# a child that cannot import torch or pytest (as on a reviewer's machine), renders,
# and reports which heavy modules ended up loaded
CHILD = """
import json, sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "pytest"):
            raise ImportError(f"{name} is not installed here")
        return None

sys.meta_path.insert(0, NoTorch())
from torchcts_report.cli import main
code = main(["render", "--results", sys.argv[1], "--json"])
print(json.dumps({"code": code, "loaded": [m for m in ("torch", "pytest")
                                            if m in sys.modules]}))
"""


def test_render_runs_without_torch(tmp_path: Path, syn) -> None:  # type: ignore[no-untyped-def]
    """render writes all three reports with torch and pytest unimportable."""
    syn.write(tmp_path, syn.artifact())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    *written, last = done.stdout.strip().splitlines()
    assert json.loads(last) == {"code": 0, "loaded": []}
    reports = json.loads("\n".join(written))["reports"]
    assert sorted(Path(p).name for p in reports) == [
        "simdev_x86-64-2cpu.html",
        "simdev_x86-64-2cpu.junit.xml",
        "simdev_x86-64-2cpu.md",
    ]
