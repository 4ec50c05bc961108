"""End to end: a simdev fault that leaves the device unusable for the process (a
``poison`` rule on float32 ``sin``), without xdist and with two workers.

The case that broke the device is error and named as such (from a fresh process), the
cases after it keep the statuses clean simdev gives them (passed, as the clean
agreement test pins), and nothing is crashed. Each run costs a fresh child that settles
the blame and either a replaced worker (xdist) or isolation children for the cases
after it: 45-50 s apiece on a shared two-core machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from torchcts_schema import CaseRecord, NextFix, Status, load_result

pytestmark = pytest.mark.timeout(900)
BIN = Path(sys.executable).parent
PROFILE = {
    "name": "sticky",
    "description": "sin in float32 leaves the device in an error state",
    "rules": [{"op": "aten::sin.out", "dtype": "float32", "fault": "poison"}],
}
MANIFEST = """
DEVICE = "simdev"
BACKEND_IMPORT = "torchcts_simdev"
BACKEND_OPTIONS = {"fault_profile": "profile.json"}
DTYPES = {"float32": True}
CAPABILITIES = ["forward"]
MAX_SAMPLES_PER_OP = 1
"""
OPS = ("abs", "neg", "sin", "sqrt", "tanh")  # sin runs before sqrt and tanh
SIN = "opinfo/sin/forward/float32/0"


def _run(root: Path, workers: int) -> tuple[str, dict[str, CaseRecord]]:
    (root / "profile.json").write_text(json.dumps(PROFILE), encoding="utf-8")
    (root / "manifest.py").write_text(MANIFEST, encoding="utf-8")
    ops = [a for op in OPS for a in ("--op", op)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHCTS_")}
    command = [str(BIN / "torchcts-run"), "--manifest", "manifest.py"]
    done = subprocess.run(
        [*command, "-n", str(workers), *ops],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-4000:]
    (folder,) = (root / "results" / "selections").iterdir()
    records = {r.case_id: r for r in load_result(folder).records}
    assert not list(folder.glob("*_crashes")), output[-4000:]
    return output, records


@pytest.mark.parametrize("workers", [0, 2])
def test_the_case_that_broke_the_device_is_named_and_the_rest_is_judged_on_a_working_one(
    tmp_path: Path, workers: int
) -> None:
    """sin float32 is error, its own device fault, named as breaking the device, next
    fix crash evidence; every other executed case passed; none crashed."""
    output, records = _run(tmp_path, workers)
    sin = records[SIN]
    assert sin.status is Status.ERROR
    assert "device fault 0x2b" in (sin.exception_message or "")
    assert (sin.detail or "").startswith(
        "this case left the device unusable: the health probe after it failed "
        "(RuntimeError: simdev device is in an error state (poisoned by aten::sin.out"
    )
    assert sin.next_fix is NextFix.CRASH_EVIDENCE
    ran = {cid: r for cid, r in records.items() if r.status is not Status.NOT_RUN}
    assert {cid.split("/")[1] for cid in ran} == set(OPS)
    for case_id, record in ran.items():
        if case_id != SIN:
            assert record.status is Status.PASSED, record
    if workers:
        assert f"left after {SIN} because its device failed a health probe" in output
    else:  # cases after sin ran in fresh children, never on the broken device
        after = {records[f"opinfo/{op}/forward/float32/0"].isolation for op in OPS[3:]}
        assert after == {"after_poison"}
