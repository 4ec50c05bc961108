"""Every status a backend can produce lands in the journal and the history, with and
without xdist (fake case source; the simdev versions live in test_simdev.py)."""

from __future__ import annotations

import pytest
from runner_helpers import (
    artifact_records,
    journal_records,
    run_args,
    use_fake_source,
    write_manifest,
)
from torchcts_schema import CrashKind, NotRunReason, Status, load_result

OPS = ["ok", "wrong", "unsupported", "notimpl_msg", "boom", "oracle", "skip"]
EXPECTED = {
    "ok": Status.PASSED,
    "wrong": Status.FAILED,
    "unsupported": Status.UNSUPPORTED,
    "notimpl_msg": Status.UNSUPPORTED,
    "boom": Status.ERROR,
    "oracle": Status.NOT_RUN,
    "skip": Status.SKIPPED,
}


@pytest.fixture(autouse=True)
def _fake(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_source(pytester, monkeypatch)


@pytest.mark.parametrize("workers", [0, 2])
def test_each_status_reaches_journal_and_history(
    pytester: pytest.Pytester, workers: int
) -> None:
    """Passed, failed, unsupported, error, not_run and skipped: journal == history."""
    write_manifest(pytester, OPS, DTYPES={"float32": True, "float64": False})
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    assert result.ret == 1, result.stdout.str()
    results = pytester.path / "results"
    journal = journal_records(results)
    history = artifact_records(results)
    assert journal == history
    for op, status in EXPECTED.items():
        assert journal[f"fake/{op}/forward/float32/0"].status is status, op
        assert (
            journal[f"fake/{op}/forward/float64/0"].not_run_reason
            is NotRunReason.DTYPE_NOT_SUPPORTED
        )
    wrong = journal["fake/wrong/forward/float32/0"]
    assert wrong.mismatch and "2.5" in wrong.mismatch
    boom = journal["fake/boom/forward/float32/0"]
    assert boom.exception_type == "RuntimeError" and "boom" in (
        boom.exception_message or ""
    )
    assert (
        journal["fake/unsupported/forward/float32/0"].exception_type
        == "NotImplementedError"
    )
    oracle = journal["fake/oracle/forward/float32/0"]
    assert oracle.not_run_reason is NotRunReason.REFERENCE_UNAVAILABLE
    assert list(results.glob("*_opinfo_oracle_failures_*.jsonl"))
    artifact = load_result(results)
    assert artifact.metadata.completed_normally
    assert artifact.metadata.counts["passed"] == 1
    assert artifact.metadata.probes["total"] >= 1
    assert (results / f"{artifact.metadata.run_key}.md").exists()
    assert list((results / f"{artifact.metadata.run_key}_history").glob("*.json"))
    expected_worker = "main" if workers == 0 else "gw"
    assert journal["fake/ok/forward/float32/0"].worker.startswith(expected_worker)


@pytest.mark.parametrize("workers", [0, 2])
def test_unclaimed_dtype_pattern_is_error_not_unsupported(
    pytester: pytest.Pytester, workers: int
) -> None:
    """A NotImplementedError on a path the manifest does not claim stays an error."""
    write_manifest(pytester, ["unsupported", "ok"], DTYPES={"float32": "^ok$"})
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    assert result.ret == 1, result.stdout.str()
    journal = journal_records(pytester.path / "results")
    assert journal["fake/unsupported/forward/float32/0"].status is Status.ERROR
    assert journal["fake/ok/forward/float32/0"].status is Status.PASSED


@pytest.mark.parametrize("workers", [0, 2])
def test_backend_hook_configures_every_executing_process(
    pytester: pytest.Pytester, workers: int
) -> None:
    """BACKEND_IMPORT is imported and torchcts_configure(BACKEND_OPTIONS) called."""
    write_manifest(
        pytester, ["configured"], BACKEND_IMPORT="fakecases",
        BACKEND_OPTIONS={"flag": "on"}, MAX_SAMPLES_PER_OP=3,
    )  # fmt: skip
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    assert result.ret == 0, result.stdout.str()
    journal = journal_records(pytester.path / "results")
    assert {r.status for r in journal.values()} == {Status.PASSED}


@pytest.mark.parametrize("workers", [0, 2])
def test_probe_table_is_printed_and_counted(
    pytester: pytest.Pytester, workers: int
) -> None:
    """The probe table has kind, probe, status, note columns; counts reach metadata."""
    write_manifest(pytester, ["ok"], DTYPES={"float32": True, "int64": True})
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    assert result.ret == 0
    result.stderr.fnmatch_lines(["*kind*probe*status*note*", "*dtype*int64*pass*"])
    artifact = load_result(pytester.path / "results")
    assert artifact.metadata.probes == {"pass": 5, "fail": 0, "total": 5}


def test_crash_kinds_are_distinct_vocabulary() -> None:
    """The crash kinds the runner emits exist in the schema."""
    assert {CrashKind.SIGNAL, CrashKind.TIMEOUT, CrashKind.SUBPROCESS} <= set(CrashKind)
