"""Adaptive isolation: earlier crashes of the same run key and torch family isolate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from torchcts_isolate import (
    adaptive_path,
    decide_adaptive,
    write_adaptive_decisions,
    write_crash_record,
)
from torchcts_isolate.cli import main
from torchcts_isolate.scan import scan_artifact
from torchcts_schema import (
    CaseRecord,
    CrashInfo,
    CrashKind,
    ExpectedSource,
    JournalWriter,
    RunArtifact,
    RunMetadata,
    Status,
    journal_path,
    make_case_id,
    node_id_for_case,
    write_history,
)

KEY = "simdev_x86-64-2cpu-24gb"


def meta(
    torch_version: str = "2.13.0", started: str = "2026-11-30T01:00:00Z"
) -> RunMetadata:
    """Run metadata for the test run key."""
    return RunMetadata(
        run_key=KEY, device="simdev", hardware_key="x86-64-2cpu-24gb",
        backend="simdev", os="Linux", python="3.11", torch_version=torch_version,
        torchcts_version="0.1.0", manifest_digest="sha256:0", command="torchcts-run",
        started_at=started,
    )  # fmt: skip


def rec(op: str, status: Status, crash: CrashInfo | None = None) -> CaseRecord:
    """A case record for opinfo/<op>/forward/float32/0."""
    case_id = make_case_id("opinfo", op, "forward", "float32", 0)
    return CaseRecord(
        case_id=case_id, node_id=node_id_for_case(case_id), op=op, variant="forward",
        dtype="float32", sample=0, level=1, status=status,
        expected_source=ExpectedSource.CPU_REFERENCE, crash=crash,
    )  # fmt: skip


def history(root: Path, records: list[CaseRecord], **kw: Any) -> Path:
    """A completed run in <key>_history."""
    return write_history(root, KEY, RunArtifact.from_records(meta(**kw), records))


def evidence_of(decisions_file: Path) -> dict[str, list[str]]:
    """case id -> evidence kinds, read back from the written file."""
    data = json.loads(decisions_file.read_text(encoding="utf-8"))
    return {
        d["case_id"]: sorted(e["evidence"] for e in d["evidence"])
        for d in data["decisions"]
    }


SEGV = CrashInfo(CrashKind.SIGNAL, "SIGSEGV")


def test_history_crashes_of_same_family_isolate(tmp_path: Path) -> None:
    """Crashed cases in same-family history are isolated; others are not."""
    history(tmp_path, [rec("add", Status.CRASHED, SEGV), rec("mul", Status.PASSED)])
    history(tmp_path, [rec("div", Status.CRASHED, CrashInfo(CrashKind.HANG))],
            torch_version="2.12.1", started="2026-11-29T00:00:00Z")  # fmt: skip
    decisions = decide_adaptive(tmp_path, KEY, "2.13.1+cpu")
    assert decisions.isolate("opinfo/add/forward/float32/0")
    assert not decisions.isolate("opinfo/mul/forward/float32/0")
    assert not decisions.isolate("opinfo/div/forward/float32/0")
    assert any("another minor family" in s["why"] for s in decisions.skipped)
    (evidence,) = decisions.cases["opinfo/add/forward/float32/0"]
    assert evidence["evidence"] == "crashed" and evidence["signal"] == "SIGSEGV"
    assert evidence["source"].startswith(f"{KEY}_history/")


def test_other_run_keys_are_ignored(tmp_path: Path) -> None:
    """Evidence from another run key never decides for this one."""
    history(tmp_path, [rec("add", Status.CRASHED, SEGV)])
    assert not decide_adaptive(tmp_path, "cuda_h200", "2.13.0").cases


def test_runlog_last_start_without_record(tmp_path: Path) -> None:
    """A run that died mid-case: its runlog's last start per worker is isolated."""
    with JournalWriter(journal_path(tmp_path, KEY)) as journal:
        journal.run_start(meta(started="2026-11-30T02:00:00Z"))
        journal.case(rec("add", Status.PASSED))
    runlog = [
        f"00000001 t gw0 {node_id_for_case('opinfo/add/forward/float32/0')}",
        f"00000002 t gw1 {node_id_for_case('opinfo/sub/forward/float32/0')}",
        f"00000003 t gw0 {node_id_for_case('opinfo/mul/forward/float32/0')}",
    ]
    (tmp_path / f"{KEY}_runlog.txt").write_text("\n".join(runlog) + "\n")
    decisions = decide_adaptive(tmp_path, KEY, "2.13.0")
    path = write_adaptive_decisions(tmp_path, decisions)
    assert path == adaptive_path(tmp_path, KEY)
    assert evidence_of(path) == {
        "opinfo/mul/forward/float32/0": ["last_start_without_record"],
        "opinfo/sub/forward/float32/0": ["last_start_without_record"],
    }


def test_crash_records_and_latest_count_once_per_run(tmp_path: Path) -> None:
    """Crash records add evidence; a latest reference to history is not counted twice."""
    history(tmp_path, [rec("add", Status.CRASHED, SEGV)])
    write_crash_record(
        tmp_path, KEY,
        {"case_id": "opinfo/add/forward/float32/0", "crash": SEGV.to_dict(),
         "environment": {"torch_version": "2.13.0"}},
    )  # fmt: skip
    write_crash_record(
        tmp_path, KEY,
        {"case_id": "opinfo/old/forward/float32/0", "crash": SEGV.to_dict(),
         "environment": {"torch_version": "2.11.0"}},
    )  # fmt: skip
    path = write_adaptive_decisions(tmp_path, decide_adaptive(tmp_path, KEY, "2.13.0"))
    assert evidence_of(path) == {
        "opinfo/add/forward/float32/0": ["crash_record", "crashed"]
    }


def test_unreadable_history_is_listed_not_fatal(tmp_path: Path) -> None:
    """A corrupt history file is recorded in 'skipped' and the rest still decides."""
    history(tmp_path, [rec("add", Status.CRASHED, SEGV)])
    (tmp_path / f"{KEY}_history" / "0000-bad.json").write_text("{oops")
    decisions = decide_adaptive(tmp_path, KEY, "2.13.0")
    assert decisions.isolate("opinfo/add/forward/float32/0")
    assert [s["source"] for s in decisions.skipped] == [f"{KEY}_history/0000-bad.json"]
    text = json.dumps(decisions.to_dict())
    assert str(tmp_path) not in text


def test_no_results_dir_means_no_decisions(tmp_path: Path) -> None:
    """A first run (nothing on disk) isolates nothing and still writes its file."""
    decisions = decide_adaptive(tmp_path / "missing", KEY, "2.13.0")
    assert decisions.cases == {}
    data = json.loads(write_adaptive_decisions(tmp_path, decisions).read_text())
    assert data["decisions"] == [] and data["torch_family"] == "2.13"


def test_cli_writes_decisions(tmp_path: Path) -> None:
    """``torchcts-isolate adaptive --write`` writes the decision file."""
    history(tmp_path, [rec("add", Status.CRASHED, SEGV)])
    args = ["adaptive", str(tmp_path), "--run-key", KEY, "--torch-version", "2.13.0"]
    assert main([*args, "--write"]) == 0
    assert evidence_of(adaptive_path(tmp_path, KEY)) == {
        "opinfo/add/forward/float32/0": ["crashed"]
    }


def test_set_aside_journal_counts(tmp_path: Path) -> None:
    """Crashes in a journal a fresh run set aside (.prev) still isolate."""
    prev = tmp_path / f"{KEY}_journal.jsonl.prev"
    with JournalWriter(prev) as journal:
        journal.run_start(meta(started="2026-11-30T03:00:00Z"))
        journal.case(rec("pow", Status.CRASHED, CrashInfo(CrashKind.TIMEOUT)))
    decisions = decide_adaptive(tmp_path, KEY, "2.13.0")
    assert decisions.isolate("opinfo/pow/forward/float32/0")
    assert decisions.cases["opinfo/pow/forward/float32/0"][0]["source"] == prev.name


def test_user_interrupt_is_not_evidence(tmp_path: Path) -> None:
    """A case in flight when the user pressed Ctrl-C is not treated as a crash."""
    node = node_id_for_case("opinfo/mul/forward/float32/0")
    with JournalWriter(journal_path(tmp_path, KEY)) as journal:
        journal.run_start(meta(started="2026-11-30T02:00:00Z"))
        journal.diagnostic("interrupted_in_flight", [node])
    (tmp_path / f"{KEY}_runlog.txt").write_text(f"00000001 t main {node}\n")
    assert not decide_adaptive(tmp_path, KEY, "2.13.0").cases


def test_scan_decodes_only_crashed_results(tmp_path: Path) -> None:
    """History scanning never decodes not_run and skips runs that report no crash."""
    crashed = history(tmp_path, [rec("add", Status.CRASHED, SEGV)])
    data = json.loads(crashed.read_text())
    data["not_run"] = "not decodable"  # proves the not_run block is never read
    crashed.write_text(json.dumps(data))
    assert [r.op for r in scan_artifact(crashed).crashed] == ["add"]
    clean = history(
        tmp_path, [rec("mul", Status.PASSED)], started="2026-11-29T00:00:00Z"
    )
    data = json.loads(clean.read_text())
    data["metadata"]["counts"] = {"crashed": 0}
    data["results"] = "not decodable"  # counts say no crash: results are not read
    clean.write_text(json.dumps(data))
    assert scan_artifact(clean).crashed == []


def test_torn_journal_line_is_passed_over(tmp_path: Path) -> None:
    """A journal cut mid-line (a kill) still yields the crashes before the cut."""
    with JournalWriter(journal_path(tmp_path, KEY)) as journal:
        journal.run_start(meta())
        journal.case(rec("add", Status.CRASHED, SEGV))
    with journal_path(tmp_path, KEY).open("a") as fh:
        fh.write('{"type":"case","record":{"case_id":"opinfo/x/forward/fl')
    assert decide_adaptive(tmp_path, KEY, "2.13.0").isolate(
        "opinfo/add/forward/float32/0"
    )


def test_corrupt_middle_journal_line_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A corrupt line before the end is not passed over in silence: the journal is
    listed as skipped with the line, in the decisions and on the command line, as
    the loader refuses it; a corrupt crash record nested too deeply is listed too."""
    path = journal_path(tmp_path, KEY)
    with JournalWriter(path) as journal:
        journal.run_start(meta())
        journal.case(rec("add", Status.CRASHED, SEGV))
        journal.case(rec("mul", Status.PASSED))
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(lines[0] + "{broken\n" + "".join(lines[1:]), encoding="utf-8")
    crashes = tmp_path / f"{KEY}_crashes"
    crashes.mkdir()
    (crashes / "deep.json").write_text("[" * 100_000, encoding="utf-8")
    decisions = decide_adaptive(tmp_path, KEY, "2.13.0")
    skipped = {s["source"]: s["why"] for s in decisions.skipped}
    assert skipped[path.name].startswith("line 2 is not valid JSON")
    assert skipped[f"{KEY}_crashes/deep.json"].startswith(
        "unreadable (maximum recursion depth exceeded"
    )
    args = ["adaptive", str(tmp_path), "--run-key", KEY, "--torch-version", "2.13.0"]
    assert main(args) == 0  # unreadable files are listed, never fatal (README)
    out = capsys.readouterr().out
    assert f"skipped {path.name}: line 2 is not valid JSON" in out


def test_set_aside_runlog_counts_against_set_aside_journal(tmp_path: Path) -> None:
    """A fresh run that set the old journal and runlog aside keeps their evidence."""
    with JournalWriter(tmp_path / f"{KEY}_journal.jsonl.prev") as journal:
        journal.run_start(meta(started="2026-11-30T04:00:00Z"))
        journal.case(rec("add", Status.PASSED))
    node = node_id_for_case("opinfo/tanh/forward/float32/0")
    (tmp_path / f"{KEY}_runlog.txt.prev").write_text(f"00000007 t main {node}\n")
    decisions = decide_adaptive(tmp_path, KEY, "2.13.0")
    assert decisions.cases["opinfo/tanh/forward/float32/0"][0]["source"] == (
        f"{KEY}_runlog.txt.prev"
    )
