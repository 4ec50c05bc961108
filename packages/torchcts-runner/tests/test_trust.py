"""Evidence a maintainer can trust when the backend, the user or the machine misbehave:
crash storms, interrupts, a dead controller, a second run, --collect-only, hostile
messages, and the same status for the same fault in every isolation mode (fake case
source)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_helpers import (
    HERE,
    artifact_records,
    journal_records,
    run_args,
    use_fake_source,
    write_manifest,
)
from torchcts_schema import CrashKind, RunLock, Status, load_result, read_journal


@pytest.fixture(autouse=True)
def _fake(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_source(pytester, monkeypatch)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _popen(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    full_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        **(env or {}),
    }
    full_env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *args], cwd=cwd, env=full_env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip


def _wait_for(predicate: object, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _case_lines(results: Path) -> int:
    journals = list(results.glob("*_journal.jsonl"))
    if not journals:
        return 0
    return sum('"type":"case"' in line for line in journals[0].read_text().splitlines())


def test_collect_only_and_help_leave_results_untouched(
    pytester: pytest.Pytester,
) -> None:
    """After a complete run, --collect-only and --help change no file in results/."""
    write_manifest(pytester, ["ok", "wrong"])
    assert pytester.runpytest_subprocess(*run_args()).ret == 1
    results = pytester.path / "results"
    before = _tree(results)
    assert pytester.runpytest_subprocess(*run_args("--co")).ret == 0
    assert pytester.runpytest_subprocess(*run_args("--help")).ret == 0
    assert pytester.runpytest_subprocess(*run_args("-k", "nothing")).ret == 5
    assert _tree(results) == before
    assert len(load_result(results).results) == 2


def test_collect_only_on_an_empty_directory_creates_nothing(
    pytester: pytest.Pytester,
) -> None:
    """--collect-only lists the cases and never creates results/."""
    write_manifest(pytester, ["ok"])
    result = pytester.runpytest_subprocess(*run_args("--co", "-q"))
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*fake/ok/forward/float32/0*"])
    assert not (pytester.path / "results").exists()


def test_second_run_on_the_same_results_is_refused(pytester: pytest.Pytester) -> None:
    """While a run holds results/, a second one is a usage error naming the holder,
    and the first run's journal is left alone."""
    write_manifest(pytester, ["ok"])
    lock = RunLock(pytester.path / "results")
    lock.acquire("torchcts-run --manifest first.py")
    try:
        result = pytester.runpytest_subprocess(*run_args())
    finally:
        lock.release()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*another TorchCTS run is writing here*first.py*"])
    assert not list((pytester.path / "results").glob("*_journal.jsonl"))


@pytest.mark.parametrize("workers", [0, 2])
def test_sigint_leaves_a_partial_report_and_resume_completes(
    pytester: pytest.Pytester, workers: int
) -> None:
    """Ctrl-C: no traceback, a snapshot and report marked interrupted with the cases
    in flight named (not crashed), exit 130 from torchcts-run; --resume completes
    with every case passed and nothing invented."""
    ops = ["ok", "sleepy", "sleepy2", "sleepy3", "sleepy4"]
    write_manifest(pytester, ops, MAX_SAMPLES_PER_OP=2)
    (pytester.path / "m.py").write_text((pytester.path / "manifest.py").read_text())
    results = pytester.path / "results"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "FAKE_SLEEP_S": "0.6",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    cli = [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "m.py",
           "--torchcts-case-source", "fakecases", "--quiet", "-n", str(workers)]  # fmt: skip
    proc = subprocess.Popen(
        cli, cwd=pytester.path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    _wait_for(lambda: _case_lines(results) >= 2)
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert "--resume" in out
    snapshot = load_result(results)
    assert not snapshot.metadata.completed_normally
    assert snapshot.metadata.interrupted_by == "SIGINT"
    (journal,) = results.glob("*_journal.jsonl")
    contents = read_journal(journal)
    assert all(r.status is not Status.CRASHED for r in contents.records.values())
    assert list(results.glob("*.md")), "the partial report is missing"
    report = next(results.glob("*.md")).read_text()
    assert "interrupt" in report.lower() or "partial" in report.lower()
    resumed = subprocess.run(
        [*cli, "--resume"], cwd=pytester.path, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    artifact = load_result(results)
    assert artifact.metadata.completed_normally and artifact.metadata.resumes == 1
    assert {r.status for r in artifact.results} == {Status.PASSED}
    assert len(artifact.results) == 2 * len(ops)


def test_kill9_of_the_controller_then_resume_invents_nothing(
    pytester: pytest.Pytester,
) -> None:
    """kill -9 of the xdist controller: its workers stop starting cases within about a
    second; --resume reruns what was in flight and ends with every case passed."""
    ops = ["ok", "sleepy", "sleepy2", "sleepy3"]
    write_manifest(pytester, ops, MAX_SAMPLES_PER_OP=3)
    results = pytester.path / "results"
    proc = _popen(pytester.path, *run_args(workers=2), env={"FAKE_SLEEP_S": "0.5"})
    _wait_for(lambda: _case_lines(results) >= 2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    (runlog,) = results.glob("*_runlog.txt")
    time.sleep(2.0)  # orphans notice within ~0.5 s and exit
    settled = runlog.read_bytes()
    time.sleep(2.0)
    assert runlog.read_bytes() == settled, "orphaned workers kept starting cases"
    resumed = pytester.runpytest_subprocess(*run_args("--resume", workers=2))
    assert resumed.ret == 0, resumed.stdout.str()
    artifact = load_result(results)
    assert artifact.metadata.completed_normally
    assert {r.status for r in artifact.results} == {Status.PASSED}
    assert len(artifact.results) == 3 * len(ops)


def test_crash_storm_both_workers_die_at_once(pytester: pytest.Pytester) -> None:
    """Two workers segfaulting in the same instant never abort the run: every crashed
    case gets its record with evidence, and the rest of the op runs isolated."""
    write_manifest(pytester, ["stormsegv", "ok"], MAX_SAMPLES_PER_OP=4)
    os.environ["FAKE_BARRIER"] = str(pytester.path / "barrier")
    try:
        result = pytester.runpytest_subprocess(*run_args(workers=2))
    finally:
        del os.environ["FAKE_BARRIER"]
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output
    assert result.ret == 1, output
    records = artifact_records(pytester.path / "results")
    storm = [r for r in records.values() if r.op == "stormsegv"]
    assert len(storm) == 4
    for record in storm:
        assert record.status is Status.CRASHED and record.crash is not None, record
        assert record.crash.signal == "SIGSEGV" and record.crash.evidence, record
    assert sum(r.isolation == "after_crash" for r in storm) >= 1
    assert {r.status for r in records.values() if r.op == "ok"} == {Status.PASSED}
    artifact = load_result(pytester.path / "results")
    assert "isolation_decisions" in artifact.diagnostics


def _outcomes(pytester: pytest.Pytester, isolate: str) -> dict[str, tuple[str, str]]:
    results = f"results-{isolate}"
    result = pytester.runpytest_subprocess(
        *run_args("--isolate", isolate, "--torchcts-results", results, workers=2)
    )
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and result.ret == 1, output
    return {
        r.op: (
            r.status.value,
            r.crash.kind.value if r.crash else r.exception_type or "",
        )
        for r in artifact_records(pytester.path / results).values()
    }


def test_same_fault_same_status_in_every_isolation_mode(
    pytester: pytest.Pytester,
) -> None:
    """SystemExit and KeyboardInterrupt raised by a kernel, a segfault, a GIL-holding
    hang, a memory blow-up past memory_mb and a hostile 1 MB message end with the
    same status and kind in process and isolated."""
    ops = ["sysexit", "kbint", "segv", "gilhang", "memblow", "hostile", "ok"]
    write_manifest(
        pytester, ops, RESOURCE_LIMITS={"case_timeout_s": 4, "memory_mb": 256}
    )
    in_process = _outcomes(pytester, "none")
    isolated = _outcomes(pytester, "all")
    assert in_process == isolated
    assert in_process["sysexit"] == ("error", "SystemExit")
    assert in_process["kbint"] == ("error", "KeyboardInterrupt")
    assert in_process["segv"] == ("crashed", CrashKind.SIGNAL.value)
    assert in_process["gilhang"] == ("crashed", CrashKind.HANG.value)
    assert in_process["memblow"] == ("error", "MemoryError")
    assert in_process["hostile"] == ("error", "RuntimeError")
    assert in_process["ok"] == ("passed", "")
    hostile = journal_records(pytester.path / "results-none")[
        "fake/hostile/forward/float32/0"
    ]
    assert hostile.exception_message is not None
    assert "\ud800" in hostile.exception_message


SWALLOWING_PLUGIN = """
import os, signal, time
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    # as code starting xdist's workers can: a Ctrl-C arrives and is caught there
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(2)
    except KeyboardInterrupt:
        pass
"""


def test_a_ctrl_c_swallowed_during_start_up_still_ends_the_run(
    pytester: pytest.Pytester,
) -> None:
    """A SIGINT that arrives while the session starts, and that code there catches
    (a Ctrl-C during xdist's worker start-up was lost and the run went on to its
    end, exit 1), ends the run before its first case: exit 130, resumable."""
    write_manifest(pytester, ["ok", "wrong"])
    (pytester.path / "m.py").write_text((pytester.path / "manifest.py").read_text())
    (pytester.path / "swallow_sigint.py").write_text(SWALLOWING_PLUGIN)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(HERE), str(pytester.path), os.environ.get("PYTHONPATH", "")]
        ),
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "m.py",
         "--torchcts-case-source", "fakecases", "--quiet", "-n", "0",
         "-p", "swallow_sigint"],
        cwd=pytester.path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 130, out
    snapshot = load_result(pytester.path / "results")
    assert snapshot.metadata.interrupted_by == "SIGINT"
    assert snapshot.results == []  # no case ran


def test_resume_with_nothing_to_resume_says_so(pytester: pytest.Pytester) -> None:
    """--resume where no run of this key wrote a journal (a mistyped --results) runs
    the whole selection afresh: said in the header, not silently."""
    write_manifest(pytester, ["ok"])
    result = pytester.runpytest_subprocess(*run_args("--torchcts-resume"))
    assert result.ret == 0, result.stdout.str()
    result.stderr.fnmatch_lines(
        [
            "TorchCTS: --resume: no journal of * nothing to continue: this is a fresh run*"
        ]
    )


def test_resume_refuses_a_journal_of_another_run(pytester: pytest.Pytester) -> None:
    """--resume with another per-case limit names what differs and runs nothing."""
    write_manifest(pytester, ["ok", "gilhang"], RESOURCE_LIMITS={"case_timeout_s": 1})
    pytester.runpytest_subprocess(*run_args())  # ends abnormally in the hang
    results = pytester.path / "results"
    (journal,) = results.glob("*_journal.jsonl")
    before = journal.read_bytes()
    refused = pytester.runpytest_subprocess(
        *run_args("--resume", "--torchcts-case-timeout", "7")
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--resume*case_timeout_s*"])
    assert journal.read_bytes() == before
    status = json.loads(json.dumps(read_journal(journal).metadata.options))  # type: ignore[union-attr]
    assert status["case_timeout_s"] == 1


def test_resume_refuses_a_journal_recording_a_case_it_does_not_plan(
    pytester: pytest.Pytester,
) -> None:
    """A journal line of a case this run does not plan (an edited journal, or a
    manifest changed since) would pass into the result unrun: refused in one line
    naming it, nothing run or written."""
    write_manifest(pytester, ["ok", "gilhang"], RESOURCE_LIMITS={"case_timeout_s": 1})
    pytester.runpytest_subprocess(*run_args())  # ends abnormally in the hang
    (journal,) = (pytester.path / "results").glob("*_journal.jsonl")
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if "fake/ok/forward/float32/0" in line]
    lines[at] = lines[at].replace("fake/ok/", "fake/<b>foreign</b>/")
    journal.write_text("".join(lines), encoding="utf-8")
    before = journal.read_bytes()
    refused = pytester.runpytest_subprocess(*run_args("--resume"))
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*--resume: the journal records 1 case(s) this run does not plan (first: "
         "fake/<b>foreign</b>/forward/float32/0)*"]
    )  # fmt: skip
    assert journal.read_bytes() == before


@pytest.fixture
def tiny_disk(tmp_path: Path) -> object:
    """A 2 MiB tmpfs (root only); skipped, saying why, where mounting is refused."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_disk_full_is_one_line_and_resume_continues(
    pytester: pytest.Pytester, tiny_disk: Path
) -> None:
    """ENOSPC mid-run: one line naming the file, no traceback, every journaled record
    readable; once there is space --resume completes the run."""
    write_manifest(pytester, ["ok", "wrong"], MAX_SAMPLES_PER_OP=150)
    results = tiny_disk / "results"
    filler = tiny_disk / "filler"
    filler.write_bytes(b"\0" * (2 * 1024 * 1024 - 160 * 1024))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    cli = [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "manifest.py",
           "--torchcts-case-source", "fakecases", "--quiet", "-n", "0",
           "--results", str(results)]  # fmt: skip
    full = subprocess.run(
        cli, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=300
    )
    output = full.stdout + full.stderr
    assert full.returncode == 3, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert "no space left on device" in output
    (journal,) = results.glob("*_journal.jsonl")
    written = read_journal(journal)
    assert 0 < len(written.records) < 300
    filler.unlink()
    resumed = subprocess.run(
        [*cli, "--resume"], cwd=pytester.path, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    artifact = load_result(results)
    assert artifact.metadata.completed_normally and len(artifact.results) == 300
