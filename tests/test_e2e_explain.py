"""End to end: a simdev run with a fault profile written for it, then
`torchcts-report explain` on a wrong-values, a wrong-strides and an error case, their
repro scripts run alone, and the scorecard's tolerance-override section.

One run (about half a minute) serves every test here.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_env import without_torchcts_env
from torchcts_report.cli import main as report_main

pytestmark = pytest.mark.timeout(900)
BIN = Path(sys.executable).parent
PROFILE = {
    "name": "explain",
    "description": "one fault per kind explain must show",
    "rules": [
        {"op": "aten::sin.out", "dtype": "float32", "fault": "wrong_values"},
        {"op": "aten::cos.out", "dtype": "float32", "fault": "wrong_values"},
        {"op": "aten::bmm.out", "dtype": "float32", "fault": "runtime_error"},
        {
            "op": "aten::empty.memory_format",
            "dtype": "bfloat16",
            "fault": "wrong_strides",
        },
    ],
}
# cos is off by ten times the float32 tolerance, which the manifest widens for cos
MANIFEST = """
DEVICE = "simdev"
BACKEND_IMPORT = "torchcts_simdev"
BACKEND_OPTIONS = {"fault_profile": "profile.json"}
DTYPES = {"float32": True, "bfloat16": True}
CAPABILITIES = ["forward", "factories"]
MAX_SAMPLES_PER_OP = 1
TOLERANCES = {"ops": {"cos": {"float32": {"atol": 0.01, "rtol": 0.01}}}}
"""
SIN = "opinfo/sin/forward/float32/0"
BMM = "opinfo/bmm/forward/float32/0"
STRIDES = "factories/empty_metadata/check/bfloat16/-"
COS = "opinfo/cos/forward/float32/0"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of one finished simdev run with the explain profile."""
    root = tmp_path_factory.mktemp("explain")
    (root / "profile.json").write_text(json.dumps(PROFILE), encoding="utf-8")
    (root / "manifest.py").write_text(MANIFEST, encoding="utf-8")
    ops = [a for op in ("sin", "cos", "bmm", "empty_metadata") for a in ("--op", op)]
    done = subprocess.run(
        [str(BIN / "torchcts-run"), "--manifest", "manifest.py", "-n", "0", *ops],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=without_torchcts_env(),
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return root


def _explain(root: Path, case: str, capsys: pytest.CaptureFixture[str]) -> str:
    old = Path.cwd()
    os.chdir(root)
    try:
        assert report_main(["explain", case]) == 0
    finally:
        os.chdir(old)
    return capsys.readouterr().out


def _json(root: Path, case: str, capsys: pytest.CaptureFixture[str]) -> str:
    old = Path.cwd()
    os.chdir(root)
    try:
        assert report_main(["explain", case, "--json"]) == 0
    finally:
        os.chdir(old)
    return capsys.readouterr().out


def test_explain_wrong_values_shows_elements_tolerance_and_repro(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong-values case: inputs, first mismatching elements with real values, the
    default-table tolerance, its history and a repro path that exists."""
    text = _explain(run_dir, "torchcts::" + SIN, capsys)
    assert "status: failed" in text
    assert "input: float32 shape [20, 20] stride [20, 1]" in text
    assert "first mismatching elements of output: 400 of 400" in text
    assert "tolerance: atol=1e-05 rtol=1.3e-05 for float32, from default_table" in text
    assert "expected-result source: cpu_reference" in text
    (aten,) = [ln for ln in text.splitlines() if ln.startswith("aten overloads")]
    assert "aten::sin" in aten.split(": ", 1)[1].split(", ")
    assert "failed" in text.split("history (1 completed run(s)):")[1]
    data = json.loads(_json(run_dir, SIN, capsys))
    first = data["record"]["facts"]["mismatches"]["first"][0]
    # the simdev fault adds 10 * (atol + rtol * |x|) with its own float32 table
    assert first["got"] - first["expected"] == pytest.approx(
        10 * (1e-5 + 1.3e-6 * abs(first["got"])), rel=1e-2
    )
    assert data["repro_exists"]
    (repro,) = [line for line in text.splitlines() if line.startswith("repro: ")]
    assert shlex.split(repro)[1:] == ["python", data["repro_path"]]


def test_explain_wrong_strides_and_error(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong-strides case shows both strides and no garbage values; an error case
    shows the backend's exception and the inputs it was given."""
    text = _explain(run_dir, STRIDES, capsys)
    assert "mismatch: empty_metadata.empty: strides (1, 3), expected (4, 1)" in text
    assert "output.empty: bfloat16 shape [3, 4] stride [1, 3]" in text
    assert "first values" not in text and "mismatching elements" not in text
    assert "tolerance: none used" in text
    text = _explain(run_dir, BMM, capsys)
    assert "status: error" in text
    assert "got:\n  output: raised RuntimeError: simdev kernel failed" in text
    assert "args[0]: float32 shape [10, 10, 5]" in text


@pytest.mark.parametrize(
    ("case", "printed"),
    [
        (SIN, "MISMATCH on simdev: output: Tensor-likes are not close!"),
        (STRIDES, "MISMATCH on simdev: output.empty: strides (1, 3), expected (4, 1)"),
        (BMM, "RuntimeError: simdev kernel failed: device fault 0x2a"),
    ],
)
def test_repro_scripts_reproduce_the_failure_alone(
    run_dir: Path, capsys: pytest.CaptureFixture[str], case: str, printed: str
) -> None:
    """Each non-passed case's script, run alone in a fresh interpreter, exits 1 and
    prints the same difference or error as its record."""
    data = json.loads(_json(run_dir, case, capsys))
    script = run_dir / data["repro_path"]
    imports = [
        line.split()[1]
        for line in script.read_text().splitlines()
        if line.startswith(("import ", "from "))
    ]
    assert "torch" in imports
    assert {i for i in imports if i.startswith("torchcts")} == {"torchcts_simdev"}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=run_dir,
        capture_output=True,
        text=True,
        timeout=300,
        env=without_torchcts_env(),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert printed in done.stdout + done.stderr
    record = data["record"]
    assert (record["mismatch"] or record["exception_message"])[:40].split(":")[-1] in (
        done.stdout + done.stderr
    )


def test_scorecard_flags_a_pass_that_needs_the_override(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cos passes only because the manifest widened its tolerance: its record says
    so, and the scorecard lists the override with its count and names the case."""
    data = json.loads(_json(run_dir, COS, capsys))
    assert data["record"]["status"] == "passed"
    assert data["record"]["tolerance"] == {
        "dtype": "float32",
        "atol": 0.01,
        "rtol": 0.01,
        "source": "manifest_op",
        "override_needed": True,
    }
    assert data["record"]["repro"] is None  # passed cases get no script
    (scorecard,) = run_dir.glob("results/selections/*/*.md")
    text = scorecard.read_text()
    assert "**1 pass only under an override**" in text
    assert "| manifest\\_op | cos | float32 | 0.01 | 0.01 | 1 | 1 |" in text
    assert f"- `{COS}`: manifest\\_op cos float32 atol=0.01 rtol=0.01" in text


BLOCK_OPINFO = """
import sys


class _NoOpInfo:
    \"\"\"Makes importing PyTorch's OpInfo database fail in this process.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name == "torch.testing._internal.common_methods_invocations":
            raise ImportError("OpInfo is blocked in this test")
        return None


sys.meta_path.insert(0, _NoOpInfo())
"""


def test_a_rerun_replays_saved_inputs_without_importing_opinfo(
    run_dir: Path, tmp_path: Path
) -> None:
    """The failed and the error case saved their samples; rerunning them by node id
    in a process that cannot import OpInfo gives the first run's statuses and
    messages (so nothing was rebuilt from OpInfo, and nothing differs)."""
    (first,) = run_dir.glob("results/selections/op-*")
    repros = next(first.glob("*_repros"))
    assert {p.name for p in repros.glob("*.pt")} >= {
        "opinfo~sin~forward~float32~0.pt",
        "opinfo~bmm~forward~float32~0.pt",
    }
    (tmp_path / "sitecustomize.py").write_text(BLOCK_OPINFO, encoding="utf-8")
    env = {**without_torchcts_env(), "PYTHONPATH": str(tmp_path)}
    nodes = [f"torchcts::{SIN}", f"torchcts::{BMM}"]
    done = subprocess.run(
        [str(BIN / "torchcts-run"), "--manifest", "manifest.py", *nodes],
        cwd=run_dir,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    from torchcts_schema import load_result

    before = {r.case_id: r for r in load_result(first).records}
    (again,) = run_dir.glob("results/selections/case-*")
    after = {r.case_id: r for r in load_result(again).records}
    for case in (SIN, BMM):
        fields = ("status", "mismatch", "exception_type", "exception_message", "facts")
        assert [getattr(after[case], f) for f in fields] == [
            getattr(before[case], f) for f in fields
        ], case
