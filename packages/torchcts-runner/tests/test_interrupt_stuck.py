"""Ctrl-C while a case is stuck in native code that holds the interpreter, so the
run's own signal handler cannot run: ``torchcts-run`` stops the run after a short
grace and finishes it as interrupted (exit 130, a partial snapshot and report, the
stuck case named in flight and never crashed), as a run that could answer does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from runner_helpers import HERE
from torchcts_runner.resume import INTERRUPTED
from torchcts_schema import Status, load_result, read_journal


def _runlog_names(results: Path, op: str) -> bool:
    return any(op in p.read_text() for p in results.glob("*_runlog.txt"))


def test_ctrl_c_during_a_native_hang_ends_the_run_as_interrupted(
    tmp_path: Path,
) -> None:
    (tmp_path / "m.py").write_text(
        'DEVICE = "cpu"\nOPS = {"include": ["ok", "gilhang", "wrong"]}\n'
        'RESOURCE_LIMITS = {"case_timeout_s": 60}\n'
    )
    results = tmp_path / "results"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "TORCHCTS_INTERRUPT_GRACE_S": "1",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    cli = [sys.executable, "-m", "torchcts_runner.cli", "--manifest", "m.py",
           "--torchcts-case-source", "fakecases", "--quiet", "-n", "0"]  # fmt: skip
    proc = subprocess.Popen(
        cli, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not _runlog_names(results, "gilhang"):
        assert time.monotonic() < deadline and proc.poll() is None, "no gilhang start"
        time.sleep(0.05)
    time.sleep(0.3)  # inside the deadlock by now
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=50)  # well before the 60 s case limit
    assert proc.returncode == 130, out
    assert "the run did not answer SIGINT within 1 s" in out, out
    assert "Traceback" not in out, out
    snapshot = load_result(results)
    assert snapshot.metadata.interrupted_by == "SIGINT"
    assert not snapshot.metadata.completed_normally
    statuses = {r.op: r.status for r in snapshot.results}
    assert "gilhang" not in statuses  # in flight: not crashed, not timed out
    assert Status.CRASHED not in statuses.values()
    assert "1 case(s) in flight were not recorded" in out, out
    assert "resumed: 1 case(s) from earlier session(s)" in out, out
    assert "--resume" in out.splitlines()[-1]
    (journal,) = results.glob("*_journal.jsonl")
    in_flight = read_journal(journal).diagnostics[INTERRUPTED]
    assert in_flight == ["torchcts::fake/gilhang/forward/float32/0"]
    assert list(results.glob("*.md")), "the partial report is missing"
