"""The plugin on the real case generator: simdev's demo faults land in the journal and
history with the right status and details; a CPU validation slice passes completely."""

from __future__ import annotations

import pytest
from runner_helpers import journal_records, subset_results
from torchcts_schema import CrashKind, Status, load_result

SIMDEV = """
DEVICE = "simdev"
BACKEND_IMPORT = "torchcts_simdev"
BACKEND_OPTIONS = {"fault_profile": "demo"}
DTYPES = {"float32": True, "int64": True}
CAPABILITIES = ["forward", "inplace"]  # the demo hang is the in-place cos call
MAX_SAMPLES_PER_OP = 2
"""
CPU = """
DEVICE = "cpu"
DTYPES = {"float32": True, "float64": True, "int64": True, "bool": True}
CAPABILITIES = ["forward", "method", "inplace", "out", "noncontiguous"]
MAX_SAMPLES_PER_OP = 2
"""
COMMON = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--torchcts-quiet"]


def _args(*extra: str, workers: int) -> list[str]:
    return ["--torchcts-manifest", "manifest.py", *COMMON, *extra, "-n", str(workers)]


@pytest.mark.timeout(900)  # selection yields ~10^5 not_run records: seconds of I/O
def test_simdev_demo_faults_land_with_status_and_details(
    pytester: pytest.Pytester,
) -> None:
    """segfault, abort, hang, wrong values, wrong dtype, missing kernel, device error:
    each becomes its status with details; every other case still has its record."""
    pytester.makefile(".py", manifest=SIMDEV)
    ops = ["exp", "log", "cos", "sin", "where", "bmm", "abs", "neg"]
    args = [a for op in ops for a in ("--op", op)]
    result = pytester.runpytest_subprocess(
        *_args(*args, "--torchcts-case-timeout", "5", workers=2)
    )
    assert result.ret == 1, result.stdout.str()
    results = subset_results(pytester.path / "results")
    records = load_result(results).results
    journal = journal_records(results)
    assert {r.case_id: r for r in records} == {
        k: v for k, v in journal.items() if v.status is not Status.NOT_RUN
    }
    by_op: dict[str, set[Status]] = {}
    for record in records:
        by_op.setdefault(record.op, set()).add(record.status)
    crashes = {r.op: r.crash for r in records if r.status is Status.CRASHED}
    assert crashes["exp"] is not None and crashes["exp"].signal == "SIGSEGV"
    assert crashes["log"] is not None and crashes["log"].signal == "SIGABRT"
    assert crashes["cos"] is not None and crashes["cos"].kind is CrashKind.HANG
    assert Status.FAILED in by_op["sin"] and Status.FAILED in by_op["abs"]
    assert by_op["where"] == {Status.UNSUPPORTED}
    assert Status.ERROR in by_op["bmm"]
    assert by_op["neg"] == {Status.PASSED}
    failed = [r for r in records if r.status is Status.FAILED]
    assert all(r.mismatch for r in failed)
    assert load_result(results).metadata.completed_normally


@pytest.mark.timeout(900)
@pytest.mark.parametrize("workers", [0, 2])
def test_cpu_validation_slice_passes_completely(
    pytester: pytest.Pytester, workers: int
) -> None:
    """--validation on cpu: a representative slice is 100% passed (else: harness bug)."""
    pytester.makefile(".py", manifest=CPU)
    ops = ["add", "mul", "sum", "sin", "where", "cat", "matmul", "clamp", "abs", "mean"]
    args = [a for op in ops for a in ("--op", op)]
    result = pytester.runpytest_subprocess(
        *_args("--validation", *args, workers=workers)
    )
    assert result.ret == 0, result.stdout.str()
    artifact = load_result(subset_results(pytester.path / "results"))
    assert artifact.metadata.completed_normally and len(artifact.results) >= 20
    assert {r.status for r in artifact.results} == {Status.PASSED}
