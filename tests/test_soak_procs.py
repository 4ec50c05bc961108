"""The soak finds what it interrupts (bench/soak_procs.py): in a real two-worker run,
its "controller" is the process that holds the run's journal open (the only journal
writer) and its "workers" are that process's xdist workers. And it compares what a
subset run keeps of the cases outside its selection (counts by reason).

The soak's kill-controller and kill-worker cycles are only as good as this lookup:
when torchcts-run started running pytest as ``-m torchcts_runner.pytest_process`` the
lookup (``-m pytest``) found nothing, and those cycles interrupted nothing while the
soak's last line still read as a pass. One simdev run on two workers (about 15 s).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from e2e_env import without_torchcts_env
from script_module import load_script

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[1]


procs = load_script("bench/soak_procs.py")
load_script("bench/soak_compare.py")  # soak.py imports its siblings by name
soak = load_script("bench/soak.py")


def _holds_open(pid: int, suffix: str) -> bool:
    """Does `pid` have a file whose name ends with `suffix` open?"""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").endswith(suffix):
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_soak_finds_the_journal_writer_and_its_workers(tmp_path: Path) -> None:
    """The writer: the run's process holding the journal open; its workers: its
    children holding the runlog open (every process that starts cases has one)."""
    command = [
        sys.executable, "-m", "torchcts_runner.cli",
        "--manifest", str(ROOT / "manifests" / "simdev.py"),
        "--results", str(tmp_path / "results"),
        "--op", "add", "--op", "mul", "--dtype", "float32", "--level", "2",
        "-n", "2", "--quiet", "--no-fail",
    ]  # fmt: skip
    env = {**without_torchcts_env(), "TORCHCTS_SIMDEV_PROFILE": "clean"}
    run = procs.launch(command, tmp_path, env, tmp_path / "run.log")
    writer = None
    starters: list[int] = []
    found: tuple[int | None, list[int]] = (None, [])
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not run.ended():
            tree = [run.proc.pid, *procs.tagged(run.tag)]
            writer = next((p for p in tree if _holds_open(p, "_journal.jsonl")), None)
            if writer is not None:  # its children that start cases: the workers
                kids = procs.children(writer)
                starters = [p for p in kids if _holds_open(p, "_runlog.txt")]
                found = (procs.controller(run), sorted(procs.workers(run)))
                if len(starters) == 2:
                    break
            time.sleep(procs.POLL_S)
        log = (tmp_path / "run.log").read_text()
        assert writer is not None and len(starters) == 2, log
        assert found == (writer, starters)
        assert procs.wait_exit(run, 240) == 0, log
    finally:
        procs.end(run)
    # what the soak compares of this run: its records, and the counts of the cases
    # outside its selection, which a subset run keeps instead of records
    entries = soak.outcomes(tmp_path / "results")
    outside = {k: v for k, v in entries.items() if k.startswith("outside:")}
    assert set(outside) == {"outside:level_filtered", "outside:filtered_by_selection"}
    assert all(v.status == "not_run" and int(v.detail) > 0 for v in outside.values())
    assert len(entries) - len(outside) > 0


def test_the_soak_runs_as_a_user_does_with_workers_auto(tmp_path: Path) -> None:
    """--workers auto gives no -n (the runner chooses by the work, as in a user's
    run); a count gives -n; 0 is refused (its segfault would end the reference)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert "-n" not in soak.Soak(tmp_path / "a", "auto").command(tmp_path / "r")
    command = soak.Soak(tmp_path / "b", "3").command(tmp_path / "r")
    assert command[command.index("-n") + 1] == "3"
    assert soak._workers("auto") == "auto"
    for bad in ("0", "-1", "two"):
        with pytest.raises(soak.argparse.ArgumentTypeError):
            soak._workers(bad)
