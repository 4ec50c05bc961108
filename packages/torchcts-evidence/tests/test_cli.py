"""The torchcts-evidence command line: exit statuses and one-line refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from evidence_builders import CRASH_CASE, make_project
from torchcts_evidence.cli import main


def test_archive_then_verify_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`archive results` from the project root writes a zip that `verify` accepts."""
    make_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["archive", "results"]) == 0
    zips = sorted(tmp_path.glob("torchcts-results-*.zip"))
    assert len(zips) == 1
    assert main(["verify", str(zips[0])]) == 0
    out = capsys.readouterr().out
    assert "OK torchcts-results-" in out and "completed normally  True" in out


def test_refusal_is_one_line_with_exit_status_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty results directory gives exit 1 and one line on stderr."""
    (tmp_path / "results").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["archive"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "empty results directory" in err


HOLD = """
import sys, time
from pathlib import Path
from torchcts_schema import RunLock
RunLock(Path(sys.argv[1])).acquire("torchcts-run --manifest manifests/simdev.py")
print("held", flush=True)
time.sleep(60)
"""


def test_archive_refuses_a_directory_a_live_run_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """While a run holds the results directory's lock, its result is a recovery
    snapshot: archive refuses (exit 1, the refusal status) in one line naming the
    directory and the holder's pid and command, and writes nothing; once the run is
    gone the same command archives."""
    make_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, "results"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        assert main(["archive", "results"]) == 1
    finally:
        proc.kill()
        proc.wait()
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("torchcts-evidence archive: results: ")
    assert "still writing" in err and f"pid {proc.pid}" in err
    assert "command: torchcts-run --manifest manifests/simdev.py" in err
    assert not list(tmp_path.glob("*torchcts-results-*"))
    assert main(["archive", "results"]) == 0


def test_verify_rejection_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify exits 1 and lists the problems of a bad archive."""
    bad = tmp_path / "x.zip"
    bad.write_bytes(b"PK nonsense")
    assert main(["verify", str(bad)]) == 1
    assert capsys.readouterr().out.startswith("REJECTED x.zip")


def test_backend_pack_and_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """backend-pack appends to evidence/backends and --check passes on the result."""
    make_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evidence" / "backends").mkdir(parents=True)
    assert main(["backend-pack", "results", "--gate", "simdev:python"]) == 0
    assert (tmp_path / "evidence" / "backends" / "simdev.jsonl").exists()
    assert main(["backend-pack", "--check"]) == 0
    assert "OK" in capsys.readouterr().out


def test_crash_candidate_and_accept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """crash-candidate writes packet and repro; --accept with review flags adds a rule."""
    make_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["crash-candidate", CRASH_CASE]) == 0
    packet = tmp_path / "crash-candidate-opinfo-mul-forward-float32-0.json"
    assert (
        tmp_path / "crash-candidate-opinfo-mul-forward-float32-0.artifact.json"
    ).exists()
    assert next(tmp_path.glob("crash-candidate-*.py")).exists()
    assert main(["crash-candidate", "--accept", packet.name]) == 1  # not reviewed
    args = [
        "--reason",
        "segv in mul",
        "--owner",
        "team",
        "--review-after",
        "2027-01-01",
    ]
    assert main(["crash-candidate", "--accept", packet.name, *args]) == 0
    ledger = json.loads((tmp_path / "known_segfaults.json").read_text())
    assert len(ledger["rules"]) == 1
    assert os.path.basename(ledger["rules"][0]["repro"]) == ledger["rules"][0]["repro"]


@pytest.mark.parametrize(("checkout", "prefix"), [(True, "bin/"), (False, "")])
def test_crash_candidate_prints_commands_as_pasted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    checkout: bool,
    prefix: str,
) -> None:
    """The repro and --accept commands it prints start with bin/ at a checkout root
    (bin/python: a bare python there has no torch), the installed names elsewhere."""
    make_project(tmp_path)
    if checkout:
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / ".launch").write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    assert main(["crash-candidate", CRASH_CASE]) == 0
    stem = "crash-candidate-opinfo-mul-forward-float32-0"
    lines = capsys.readouterr().out.splitlines()
    assert f"wrote {stem}.py (standalone: {prefix}python {stem}.py)" in lines
    assert lines[-1].endswith(
        f"a maintainer adds it with: {prefix}torchcts-evidence crash-candidate "
        f"--accept {stem}.json"
    )


def test_archive_and_verify_print_the_note_of_a_cut_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An interrupted run whose journal's last line is cut: archive exits 0 and
    prints one note line naming the journal; verify exits 0 and prints it too."""
    project = make_project(tmp_path, completed=False)
    journal = next(project.results.glob("*_journal.jsonl"))
    journal.write_bytes(journal.read_bytes()[:-20])
    monkeypatch.chdir(tmp_path)
    assert main(["archive", "results"]) == 0
    note = f"note: results/{journal.name}: its last line is cut off"
    assert note in capsys.readouterr().out
    (archive,) = tmp_path.glob("torchcts-results-*.zip")
    assert main(["verify", str(archive)]) == 0
    assert note in capsys.readouterr().out
