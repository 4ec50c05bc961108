"""End to end: `torchcts-run --recheck-exclusions` on simdev's demo profile.

The manifest excludes abs (which works on simdev in float32) and declares int64
unsupported (the demo profile's int64 abs returns int32, and its int64 multiply drops
the high word); the project's known-crash ledger holds a stale rule for mul in
float32. A recheck of abs and mul runs exactly those declined cases (the rule's in a
child process) in its own folder, proposes removing the abs exclude and the rule with
a patch that applies, keeps DTYPES int64 with its failures as evidence, and leaves
the manifest's and the ledger's bytes as they were. One run without xdist workers
(about 25 s: importing torch, the probes and the isolation children).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_env import without_torchcts_env
from torchcts_schema import (
    ResultsLayout,
    Status,
    load_known_crash_rules,
    load_manifest,
    load_result,
)

pytestmark = pytest.mark.timeout(900)
BIN = Path(sys.executable).parent
FOLDER = "recheck-exclusions_op-abs+mul"
ABS32 = "opinfo/abs/forward/float32/0"
ABS64 = "opinfo/abs/forward/int64/0"
MUL64 = "opinfo/mul/forward/int64/0"
MUL32 = "opinfo/mul/forward/float32/0"
RULE = {
    "id": "simdev-mul-f32",
    "backend": "simdev",
    "match": {"case_glob": "opinfo/mul/forward/float32/*"},
    "expected_signal": "SIGSEGV",
    "reason": "mul segfaulted on float32 vectors in driver 1.0",
    "owner": "tests",
    "repro": "torchcts-run --manifest manifest.py --op mul --dtype float32",
    "review_after": "2030-01-01",
}
LEDGER = json.dumps({"format": "torchcts-known-crashes", "version": 1, "rules": [RULE]})
MANIFEST = '''"""simdev with a stale exclusion (abs) and a real one (int64)."""
DEVICE = "simdev"
BACKEND_IMPORT = "torchcts_simdev"
BACKEND_OPTIONS = {"fault_profile": "demo"}
DTYPES = {"float32": True, "int64": False}
CAPABILITIES = ["forward", "method", "inplace", "out", "backward", "error_inputs", "noncontiguous"]
RESOURCE_LIMITS = {"case_timeout_s": 20}
OPS = {
    "exclude": {
        "abs": "suspected wrong results",
    }
}
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The working directory of one finished recheck, and what it printed."""
    root = tmp_path_factory.mktemp("recheck")
    (root / "manifest.py").write_text(MANIFEST, encoding="utf-8")
    (root / "known_segfaults.json").write_text(LEDGER, encoding="utf-8")
    argv = ["--manifest", "manifest.py", "--recheck-exclusions", "-n", "0"]
    done = subprocess.run(
        [str(BIN / "torchcts-run"), *argv, "--op", "abs", "--op", "mul"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=without_torchcts_env(),
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]  # two declined cases really fail
    return root, out


def _layout(root: Path) -> ResultsLayout:
    folder = root / "results" / "selections" / FOLDER
    (latest,) = folder.glob("*_latest.json")
    return ResultsLayout(folder, latest.name.split("_latest.json")[0])


def test_runs_exactly_the_declined_cases_in_its_own_folder(
    run: tuple[Path, str],
) -> None:
    """Only the declined abs and int64 cases and the rule's mul float32 cases ran,
    the rule's in a child, with the demo's faults, under
    selections/recheck-exclusions_op-abs+mul; manifest and ledger are unchanged."""
    root, _ = run
    layout = _layout(root)
    records = {r.case_id: r for r in load_result(layout.results_dir).records}
    executed = {k: r.status for k, r in records.items() if r.status != Status.NOT_RUN}
    ruled = sorted(k for k in executed if k.startswith("opinfo/mul/forward/float32/"))
    assert MUL32 in ruled and {executed[k] for k in ruled} == {Status.PASSED}
    declined = {k: s for k, s in executed.items() if k not in ruled}
    # the abs exclude's and DTYPES int64's cases, nothing the manifest runs
    assert all(k.split("/")[1] == "abs" or k.split("/")[3] == "int64" for k in declined)
    abs32 = {k: s for k, s in declined.items() if k.split("/")[3] == "float32"}
    assert ABS32 in abs32 and set(abs32.values()) == {Status.PASSED}
    assert {k.split("/")[2] for k in abs32} >= {"method", "inplace", "out", "backward"}
    # the demo's int64 abs returns int32 in every variant; its int64 multiply drops
    # the high word except on the empty sample (8), which has no word to drop
    for case_id, status in declined.items():
        _, op, _, dtype, sample = case_id.split("/")
        if dtype == "int64":
            want = Status.PASSED if op == "mul" and sample == "8" else Status.FAILED
            assert status is want, case_id
    assert executed[ABS64] is Status.FAILED and executed[MUL64] is Status.FAILED
    assert {records[k].isolation for k in ruled} == {"ledger"}
    assert records[ABS32].isolation == "none"
    assert not list((root / "results").glob("*_latest.json"))  # no full-run files
    assert (root / "manifest.py").read_bytes() == MANIFEST.encode()
    assert (root / "known_segfaults.json").read_bytes() == LEDGER.encode()


def test_report_proposes_the_stale_entry_and_keeps_the_real_one(
    run: tuple[Path, str],
) -> None:
    """abs exclude: remove, with its passing case; int64: still needed, with both
    failures and the first one's message; both paths printed at the end."""
    root, out = run
    layout = _layout(root)
    records = load_result(layout.results_dir).records
    abs32 = sum(
        r.op == "abs" and r.dtype == "float32" and r.status is Status.PASSED
        for r in records
    )
    failed64 = sum(r.dtype == "int64" and r.status is Status.FAILED for r in records)
    report = layout.recheck_report.read_text(encoding="utf-8")
    remove = report.split("## Remove from the manifest (2)")[1].split("## ")[0]
    keep = report.split("## Still needed (1)")[1].split("## ")[0]
    assert "`OPS['exclude']['abs']`" in remove and f"`{ABS32}`" in remove
    assert f"removing it runs {abs32}, all passed" in remove
    assert "`DTYPES['int64'] (False)`" in keep and f"{failed64} failed" in keep
    assert f"first: `{ABS64}` failed: `output: dtype int32, expected int64`" in keep
    assert f"`{MUL64}`" in keep
    assert "`known-crash rule 'simdev-mul-f32'`" in remove
    assert "of them ran in a child process" in remove
    relative = layout.recheck_report.relative_to(root).as_posix()
    assert f"TorchCTS recheck report: {relative}" in out
    patch = layout.recheck_patch.relative_to(root).as_posix()
    assert f"TorchCTS recheck manifest patch: {patch}" in out


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch tool")
def test_patch_removes_only_the_stale_entry(
    run: tuple[Path, str], tmp_path: Path
) -> None:
    """The patch applies with patch -p1 to a copy; the manifest loads, no longer
    excludes abs and still declares int64 unsupported; the ledger loses its rule."""
    root, _ = run
    patch = _layout(root).recheck_patch.read_text(encoding="utf-8")
    (tmp_path / "manifest.py").write_text(MANIFEST, encoding="utf-8")
    (tmp_path / "known_segfaults.json").write_text(LEDGER, encoding="utf-8")
    done = subprocess.run(
        ["patch", "-p1", "--batch"],
        input=patch,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    patched = load_manifest(tmp_path / "manifest.py")
    assert patched.ops_exclude == {}
    assert patched.dtypes == {"float32": True, "int64": False}
    assert load_known_crash_rules(tmp_path / "known_segfaults.json") == []
