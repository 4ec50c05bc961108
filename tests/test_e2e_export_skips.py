"""End to end: a simdev demo run of mul and where in int64 (the demo profile's 64-bit
multiply that drops the high word, and where's missing kernel), then `torchcts-report
export-skips` in each format, each read back the way its consumer would: the JSON
parsed, the torch-xpu-ops skip_dict evaluated as a literal, and the OpInfo snippet
executed with PyTorch's own DecorateInfo and matched against the real OpInfo entries.

One in-process run (about 20 s, most of it importing torch and building the probe
table) serves every test here; the OpInfo test also imports PyTorch's OpInfo database
(about 10 s), the only way to check the keys against the real entries.
"""

from __future__ import annotations

import ast
import copy
import json
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

import pytest
from e2e_env import without_torchcts_env
from torchcts_report.cli import main as report_main

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MUL = "opinfo/mul/forward/int64/0"
WHERE = "opinfo/where/forward/int64/0"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results directory of one finished simdev demo run of mul and where."""
    root = tmp_path_factory.mktemp("export")
    shutil.copy(ROOT / "manifests" / "simdev.py", root / "manifest.py")
    # the two forward cases by node id: level 1 also runs mul's other variants
    argv = [
        "--manifest",
        "manifest.py",
        "-n",
        "0",
        f"torchcts::{MUL}",
        f"torchcts::{WHERE}",
    ]
    done = subprocess.run(
        [str(BIN / "torchcts-run"), *argv],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=without_torchcts_env(),
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = (root / "results" / "selections").iterdir()
    return run


def _export(results: Path, form: str, capsys: pytest.CaptureFixture[str]) -> str:
    argv = ["export-skips", "--results", str(results), "--format", form]
    assert report_main(argv) == 0
    return capsys.readouterr().out


def test_json_holds_the_demo_faults_with_status_reason_and_case(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """mul int64 failed with its mismatch; where int64 is unsupported, no kernel."""
    rows = {
        row["case_ids"][0]: row for row in json.loads(_export(results, "json", capsys))
    }
    assert sorted(rows) == [MUL, WHERE]
    mul, where = rows[MUL], rows[WHERE]
    assert (mul["status"], mul["count"], mul["run"]) == ("failed", 1, 1)
    assert mul["reason"].startswith("mismatch: ")
    assert where["status"] == "unsupported"
    assert "aten::where.self" in where["reason"]


def test_xpu_ops_skip_dict_names_the_upstream_tests(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The skip_dict literal names test_compare_cpu_<op>_simdev_int64 for both."""
    tree = ast.parse(_export(results, "xpu-ops", capsys))
    (assign,) = tree.body
    assert isinstance(assign, ast.Assign)
    assert ast.literal_eval(assign.value) == {
        "test_ops_simdev.py": (
            "test_compare_cpu_mul_simdev_int64",
            "test_compare_cpu_where_simdev_int64",
        )
    }


def test_opinfo_snippet_decorates_the_real_opinfo_tests(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Executed with torch, op_overrides holds DecorateInfo objects that PyTorch's
    OpInfo machinery applies to test_compare_cpu of mul and where in int64 on simdev
    only: an expected failure for mul, a skip for where."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    namespace: dict[str, object] = {}
    exec(compile(_export(results, "opinfo", capsys), "<opinfo>", "exec"), namespace)
    overrides = namespace["op_overrides"]
    assert isinstance(overrides, dict) and sorted(overrides) == ["mul", "where"]
    ops = {op.full_name: op for op in op_db if op.full_name in overrides}
    assert sorted(ops) == ["mul", "where"]  # the keys are real OpInfo full names
    test = ("TestCommon", "test_compare_cpu")
    for name, op in ops.items():
        patched = copy.copy(op)  # op_db is shared with the rest of the session
        patched.decorators = (*op.decorators, *overrides[name])  # as a team adds them
        before = op.get_decorators(*test, "simdev", torch.int64, {})
        after = patched.get_decorators(*test, "simdev", torch.int64, {})
        assert after[:-1] == before
        added = after[-1]
        if name == "mul":
            assert added is unittest.expectedFailure
        else:
            with pytest.raises(unittest.SkipTest, match="unsupported"):
                added(lambda: None)()
        for other in (("simdev", torch.float32), ("cpu", torch.int64)):
            assert added not in patched.get_decorators(*test, *other, {})
