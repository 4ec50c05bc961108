"""Crashes and hangs stay honest records: xdist worker deaths, timeouts, and --resume
after the whole process died (fake case source)."""

from __future__ import annotations

import json

import pytest
from runner_helpers import (
    artifact_records,
    journal_records,
    run_args,
    use_fake_source,
    write_manifest,
)
from torchcts_schema import CrashKind, Status, load_result, read_journal


@pytest.fixture(autouse=True)
def _fake(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_source(pytester, monkeypatch)


def _crash_file(pytester: pytest.Pytester, case_id: str) -> dict[str, object]:
    (crash_dir,) = (pytester.path / "results").glob("*_crashes")
    matches = [
        p
        for p in crash_dir.glob("*.json")
        if json.loads(p.read_text())["case_id"] == case_id
    ]
    assert len(matches) == 1, list(crash_dir.iterdir())
    return json.loads(matches[0].read_text())


def test_xdist_worker_crashes_are_crashed_with_signal(
    pytester: pytest.Pytester,
) -> None:
    """Segfault, abort and os._exit in workers: crashed with kind, signal or exit code;
    the run goes on past many crashes and completes with every other record."""
    write_manifest(pytester, ["segv", "abort", "exit", "ok"], MAX_SAMPLES_PER_OP=3)
    result = pytester.runpytest_subprocess(*run_args(workers=2))  # 9 crashes > 8
    assert result.ret == 1, result.stdout.str()
    records = artifact_records(pytester.path / "results")
    assert len(records) == 12
    for sample in range(3):
        segv = records[f"fake/segv/forward/float32/{sample}"]
        assert segv.status is Status.CRASHED and segv.crash is not None
        assert (segv.crash.kind, segv.crash.signal) == (CrashKind.SIGNAL, "SIGSEGV")
        abort = records[f"fake/abort/forward/float32/{sample}"]
        assert abort.crash is not None and abort.crash.signal == "SIGABRT"
        exit_ = records[f"fake/exit/forward/float32/{sample}"]
        assert exit_.crash is not None
        assert (exit_.crash.kind, exit_.crash.exit_code) == (CrashKind.SUBPROCESS, 3)
        assert records[f"fake/ok/forward/float32/{sample}"].status is Status.PASSED
    assert load_result(pytester.path / "results").metadata.completed_normally
    evidence = _crash_file(pytester, "fake/segv/forward/float32/0")
    assert evidence["crash"]["signal"] == "SIGSEGV"  # type: ignore[index]
    assert "torchcts::fake/segv/forward/float32/0" in evidence["repro_command"]  # type: ignore[operator]
    assert any(
        "fake/segv/forward/float32/0" in line for line in evidence["runlog_tail"]
    )  # type: ignore[union-attr]
    assert "Segmentation fault" in str(evidence["traceback"])
    segv = records["fake/segv/forward/float32/0"]
    assert (
        segv.crash is not None
        and segv.crash.evidence
        and segv.crash.evidence.endswith(".json")
    )


@pytest.mark.parametrize("workers", [0, 2])
def test_timeouts_are_crashed_timeout(pytester: pytest.Pytester, workers: int) -> None:
    """A Python hang is stopped in process and a native hang ends the worker: both
    crashed/timeout; a hang holding the GIL is crashed/hang (as when isolated); the
    others still run."""
    ops = ["pyhang", "ok", "hang", "gilhang"] if workers else ["pyhang", "ok"]
    write_manifest(pytester, ops, RESOURCE_LIMITS={"case_timeout_s": 1})
    result = pytester.runpytest_subprocess(*run_args(workers=workers))
    assert result.ret == 1, result.stdout.str()
    records = artifact_records(pytester.path / "results")
    for op in ops:
        record = records[f"fake/{op}/forward/float32/0"]
        if op == "ok":
            assert record.status is Status.PASSED
            continue
        assert record.status is Status.CRASHED, record
        kind = CrashKind.HANG if op == "gilhang" else CrashKind.TIMEOUT
        assert record.crash is not None and record.crash.kind is kind, record
        assert record.crash.evidence
    if workers:
        assert "native" in (records["fake/hang/forward/float32/0"].crash.detail or "")  # type: ignore[union-attr]
        assert "GIL" in (records["fake/gilhang/forward/float32/0"].crash.detail or "")  # type: ignore[union-attr]


@pytest.mark.parametrize("hang", ["hang", "gilhang"])
def test_native_hang_without_xdist_then_resume(
    pytester: pytest.Pytester, hang: str
) -> None:
    """Without xdist a native hang ends the process (the watchdog journals it first when
    it can run; a GIL-holding hang leaves faulthandler's timeout dump); --resume
    records crashed/timeout, runs the rest and ends in one complete result."""
    write_manifest(
        pytester, ["ok", hang, "wrong"], RESOURCE_LIMITS={"case_timeout_s": 1}
    )
    pytester.runpytest_subprocess(*run_args())  # ends abnormally (exit 1 for gilhang)
    results = pytester.path / "results"
    (journal_file,) = results.glob("*_journal.jsonl")
    assert not read_journal(journal_file).ended
    journal = journal_records(results)
    if hang == "hang":  # the Python watchdog could run and journal before exiting
        assert journal["fake/hang/forward/float32/0"].crash.kind is CrashKind.TIMEOUT  # type: ignore[union-attr]
    assert "fake/wrong/forward/float32/0" not in journal
    second = pytester.runpytest_subprocess(*run_args("--resume"))
    assert second.ret == 1, second.stdout.str()
    artifact = load_result(results)
    assert artifact.metadata.completed_normally
    records = {r.op: r for r in artifact.results}
    assert {op: r.status for op, r in records.items()} == {
        "ok": Status.PASSED, hang: Status.CRASHED, "wrong": Status.FAILED,
    }  # fmt: skip
    crash = records[hang].crash
    kind = CrashKind.HANG if hang == "gilhang" else CrashKind.TIMEOUT
    assert crash is not None and crash.kind is kind


@pytest.mark.parametrize(
    "op, kind, signal",
    [("segv", CrashKind.SIGNAL, "SIGSEGV"), ("sigkill", CrashKind.SIGNAL, "SIGKILL")],
)
def test_resume_after_process_death_records_the_case_it_died_in(
    pytester: pytest.Pytester, op: str, kind: CrashKind, signal: str | None
) -> None:
    """A run killed in a case resumes: a segfault left its dump, so that case is
    crashed from the runlog; a SIGKILL left no evidence, so the case is retried
    isolated and its own death there is the record. The finished ones keep their
    records, the rest run, once each."""
    write_manifest(pytester, ["ok", op, "wrong"])
    first = pytester.runpytest_subprocess(*run_args())
    assert first.ret not in (0, 1)
    results = pytester.path / "results"
    assert set(journal_records(results)) >= {"fake/ok/forward/float32/0"}
    second = pytester.runpytest_subprocess(*run_args("--resume"))
    assert second.ret == 1, second.stdout.str()
    artifact = load_result(results)
    assert artifact.metadata.completed_normally
    records = {r.op: r for r in artifact.results}
    assert (
        records["ok"].status is Status.PASSED
        and records["wrong"].status is Status.FAILED
    )
    crashed = records[op]
    assert crashed.status is Status.CRASHED and crashed.crash is not None
    assert (crashed.crash.kind, crashed.crash.signal) == (kind, signal)
    if op == "segv":
        assert "runlog" in crashed.crash.detail
    else:
        assert crashed.isolation == "retry", crashed
    (journal,) = results.glob("*_journal.jsonl")
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    ok_lines = [x for x in lines if x["type"] == "case" and x["record"]["op"] == "ok"]
    assert len(ok_lines) == 1
