"""End to end: dtype discovery of a simdev backend whose float16 support is partial.

The simdev profile `float16_partial` has no float16 kernel for sin, cos and exp and no
kernel at all for where. `torchcts-cases discover` probes add, mul, sin, cos and where
(forward and backward, one sample each, float16 and float32) through the real runner,
and must propose float16 as supported with sin and cos left out, where excluded in OPS
(unsupported in both dtypes), float32 kept True, every entry with its counts and
confirm command. The proposal is then loaded by the schema's manifest loader and run
through the real selection, so what it *means* is checked, not only how it reads; and
one printed confirm command is run as pasted.

One probe (about 15 s on an idle machine: a runner start, the OpInfo import, 20
cases) serves the module; the pasted confirm command is a second runner start (about
10 s), the only way to show a printed command works.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_env import without_torchcts_env
from torchcts_cases import Selection, select_cases
from torchcts_cases.cli import main as cases_main
from torchcts_schema import NotRunReason, dtype_claims, load_manifest

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OPS = ("add", "mul", "sin", "cos", "where")
DTYPES = ("float16", "float32")


def _discover(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = ["discover", "--manifest", "manifest.py", "--samples", "1", "-n", "0"]
    for op in OPS:
        argv += ["--op", op]
    for dtype in DTYPES:
        argv += ["--dtype", dtype]
    return subprocess.run(
        [str(BIN / "torchcts-cases"), *argv, *extra],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=without_torchcts_env(),
        check=False,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the partial-float16 manifest, after one discover."""
    root = tmp_path_factory.mktemp("discover")
    text = (ROOT / "manifests" / "simdev.py").read_text(encoding="utf-8")
    text = text.replace(
        '{"fault_profile": "demo"}', '{"fault_profile": "float16_partial"}'
    )
    text, count = re.subn(
        r"^DTYPES = \{.*?^\}$",
        'DTYPES = {"float32": True, "float16": True}',
        text,
        flags=re.S | re.M,
    )
    assert count == 1 and "float16_partial" in text
    (root / "manifest.py").write_text(text, encoding="utf-8")
    done = _discover(root, "--out", "proposed.py")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Claimed vs discovered dtype support" in done.stdout
    return root


def _run_dir(root: Path) -> Path:
    (run,) = (root / "results" / "discovery" / "selections").iterdir()
    return run


def test_proposal_loads_and_claims_float16_for_the_working_ops_only(root: Path) -> None:
    """float16: add and mul claimed, sin and cos not; where in OPS; float32 True."""
    manifest = load_manifest(root / "proposed.py")
    f16 = manifest.dtypes["float16"]
    assert isinstance(f16, str)
    claimed = {op for op in OPS if dtype_claims(f16, op, op)}
    assert claimed == {"add", "mul", "where"}  # where is OPS's to exclude
    assert dtype_claims(f16, "nn.functional.relu", "nn.functional.relu")  # unprobed
    assert manifest.dtypes["float32"] is True
    # the exclusions simdev.py already has, kept, and where added by the probes
    assert set(manifest.ops_exclude) == {
        "_lazy_clone",
        "to_sparse",
        "sparse.mm.reduce",
        "sparse.sampled_addmm",
        "where",
    }
    assert (
        "unsupported in every probed dtype (float16, float32)"
        in (manifest.ops_exclude["where"])
    )
    # the rest of the user's manifest is untouched
    original = load_manifest(root / "manifest.py")
    assert manifest.capabilities == original.capabilities
    assert manifest.backend_options == original.backend_options


def test_selection_of_the_proposal_runs_what_works_and_declares_the_rest(
    root: Path,
) -> None:
    """The real selection: add float16 runs, sin float16 is dtype_not_supported,
    where is op_excluded, sin float32 runs."""
    manifest = load_manifest(root / "proposed.py")
    selected = select_cases(
        manifest, Selection(level=8, dtypes=DTYPES, suites=("opinfo",), op_globs=OPS)
    )
    runnable = {spec.case_id for spec in selected.runnable}
    assert "opinfo/add/forward/float16/0" in runnable
    assert "opinfo/sin/forward/float32/0" in runnable
    reasons = {r.case_id: r.not_run_reason for r in selected.not_run}
    assert reasons["opinfo/sin/forward/float16/0"] is NotRunReason.DTYPE_NOT_SUPPORTED
    assert reasons["opinfo/cos/backward/float16/0"] is NotRunReason.DTYPE_NOT_SUPPORTED
    assert reasons["opinfo/where/forward/float32/0"] is NotRunReason.OP_EXCLUDED


def test_each_entry_carries_its_counts_and_confirm_command(root: Path) -> None:
    """One sample per variant: sin float16 is 0/0/1/0/0 forward and backward."""
    text = (root / "proposed.py").read_text(encoding="utf-8")
    probe = "results/discovery/probe_manifest.py"
    assert (
        "#   sin: unsupported, no longer claimed: "
        "forward 0/0/1/0/0, backward 0/0/1/0/0" in text
    )
    again = f"torchcts-run --manifest {probe} --results results/discovery"
    assert f"{again} --op sin --dtype float16" in text
    assert "# float16: claimed True before; 5 ops probed, samples 4/0/6/0/0" in text
    assert "#   work in every sample: add, mul" in text
    assert f"{again} --op where --dtype float16 --dtype float32" in text
    assert "torchcts-run --manifest proposed.py --dtype float16 --level 4" in text


def test_markdown_and_json_sit_beside_the_probe(root: Path) -> None:
    """discovery.md has the claimed-vs-discovered row; discovery.json the decisions."""
    run = _run_dir(root)
    page = (run / "discovery.md").read_text(encoding="utf-8")
    assert page.startswith("# Claimed vs discovered dtype support")
    assert (
        "| float16 | `True` | `(?!(?:cos\\|sin)$).*` | 5 | 2 | 3 | 0 | 4/0/6/0/0 |"
        in page
    )
    doc = json.loads((run / "discovery.json").read_text(encoding="utf-8"))
    (f16,) = [d for d in doc["dtypes"] if d["dtype"] == "float16"]
    assert (f16["declared"], f16["in_ops"], f16["works"]) == (
        ["cos", "sin"],
        ["where"],
        ["add", "mul"],
    )
    assert doc["ops_exclude"] == [{"op": "where", "dtypes": ["float16", "float32"]}]
    for written in (page, json.dumps(doc), (root / "proposed.py").read_text()):
        assert str(root) not in written  # relative paths only


def test_from_results_rereads_the_probe_and_refuses_another(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Same inputs: the same proposal without a run; another --samples: one line."""
    monkeypatch.chdir(root)
    run = _run_dir(root).relative_to(root).as_posix()
    argv = ["discover", "--manifest", "manifest.py", "--from-results", run]
    assert cases_main([*argv, "--samples", "1"]) == 0
    first = (root / "proposed.py").read_text(encoding="utf-8")
    assert capsys.readouterr().out == first.replace(
        "--manifest proposed.py", "--manifest proposed_manifest.py"
    )
    assert cases_main([*argv, "--samples", "2"]) == 2
    err = capsys.readouterr().err
    assert "not a probe of manifest.py with --samples 2" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_printed_confirm_command_shows_the_evidence(root: Path) -> None:
    """Pasted, the sin float16 command runs both probed samples: unsupported."""
    text = (root / "proposed.py").read_text(encoding="utf-8")
    (line,) = [
        ln
        for ln in text.splitlines()
        if "--op sin --dtype float16" in ln and "probe_manifest" in ln
    ]
    words = shlex.split(line.lstrip("# "))
    assert words[0] == "torchcts-run"
    done = subprocess.run(
        [str(BIN / "torchcts-run"), *words[1:], "-n", "0", "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=without_torchcts_env(),
        check=False,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    counts = json.loads(done.stdout)["counts"]
    assert (counts["unsupported"], counts["passed"]) == (2, 0)
