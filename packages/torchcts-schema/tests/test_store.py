"""Journal, snapshot, history and the one loader, including the SIGKILL guarantee."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from schema_factories import metadata, record
from torchcts_schema import (
    ArtifactError,
    JournalWriter,
    RunArtifact,
    SnapshotWriter,
    Status,
    history_dir,
    journal_path,
    latest_path,
    load_result,
    read_journal,
    write_history,
)

KEY = "simdev_x86-64-2cpu-24gb"


def test_history_replaces_latest_with_relative_reference(tmp_path: Path) -> None:
    """After completion, latest is a small relative reference the loader follows."""
    records = [record(sample=i) for i in range(10)] + [
        record(op="x", status=Status.NOT_RUN)
    ]
    artifact = RunArtifact.from_records(
        metadata(completed_normally=True), records, {"d": 1}
    )
    target = write_history(tmp_path, KEY, artifact)
    assert target.parent == history_dir(tmp_path, KEY)
    reference = json.loads(latest_path(tmp_path, KEY).read_text())
    assert reference["target"] == f"{KEY}_history/{target.name}"
    assert not Path(reference["target"]).is_absolute()
    for where in (tmp_path, latest_path(tmp_path, KEY), target):
        loaded = load_result(where)
        assert loaded.results == artifact.results
        assert loaded.not_run == artifact.not_run
        assert loaded.diagnostics == {"d": 1}


def test_history_is_written_once_never_overwritten(tmp_path: Path) -> None:
    """Two completions in the same second get two history files."""
    artifact = RunArtifact.from_records(metadata(), [record()])
    first = write_history(tmp_path, KEY, artifact)
    second = write_history(tmp_path, KEY, artifact)
    assert first != second and first.exists() and second.exists()


def test_snapshot_is_rate_limited(tmp_path: Path) -> None:
    """The snapshot is not rewritten once per case."""
    writer = SnapshotWriter(latest_path(tmp_path, KEY), min_interval_s=60)
    build_calls = []

    def build() -> tuple[RunArtifact, int]:
        build_calls.append(1)
        return RunArtifact.from_records(metadata(), [record()]), 1

    assert writer.maybe_write(build)
    assert not any(writer.maybe_write(build) for _ in range(100))
    assert len(build_calls) == 1
    assert writer.maybe_write(build, force=True)


def test_loader_prefers_journal_newer_than_snapshot(tmp_path: Path) -> None:
    """A snapshot older than the journal is replaced by a rebuild from the journal."""
    with JournalWriter(journal_path(tmp_path, KEY)) as journal:
        journal.run_start(metadata())
        for i in range(3):
            journal.case(record(sample=i))
        SnapshotWriter(latest_path(tmp_path, KEY)).maybe_write(
            lambda: (
                RunArtifact.from_records(
                    metadata(), [record(sample=i) for i in range(3)]
                ),
                3,
            )
        )
        for i in range(3, 7):
            journal.case(record(sample=i))
    loaded = load_result(tmp_path)
    assert [r.sample for r in loaded.results] == list(range(7))
    assert loaded.metadata.completed_normally is False


def test_journal_tolerates_truncated_last_line_and_repairs_it(tmp_path: Path) -> None:
    """A half-written last line is ignored on read and cut before the next append."""
    path = journal_path(tmp_path, KEY)
    with JournalWriter(path) as journal:
        journal.run_start(metadata())
        journal.case(record(sample=0))
    with open(path, "a") as fh:
        fh.write('{"type":"case","record":{"case_id":"opinfo/ad')
    contents = read_journal(path)
    assert contents.truncated_tail and list(contents.records) == [
        record(sample=0).case_id
    ]
    with JournalWriter(path) as journal:
        journal.case(record(sample=1))
    assert len(read_journal(path).records) == 2
    assert not read_journal(path).truncated_tail


def test_resumed_record_replaces_earlier_one(tmp_path: Path) -> None:
    """A case recorded twice (resume) keeps its last record only."""
    path = journal_path(tmp_path, KEY)
    with JournalWriter(path) as journal:
        journal.run_start(metadata())
        journal.case(record(sample=0, status=Status.CRASHED))
        journal.run_start(metadata(), resumed=True)
        journal.case(record(sample=0, status=Status.PASSED))
    assert [r.status for r in load_result(path).results] == [Status.PASSED]


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from schema_factories import metadata, record
    from torchcts_schema import JournalWriter
    journal = JournalWriter(Path(sys.argv[1]))
    journal.run_start(metadata())
    i = 0
    while True:
        journal.case(record(sample=i))
        print(i, flush=True)
        i += 1
    """
)


def test_sigkill_mid_run_loses_no_appended_record(tmp_path: Path) -> None:
    """Every record appended before a SIGKILL loads back after it."""
    path = journal_path(tmp_path, KEY)
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(Path(__file__).parent)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    acknowledged = -1
    deadline = time.monotonic() + 60
    while acknowledged < 200 and time.monotonic() < deadline:
        acknowledged = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    loaded = load_result(path)
    samples = [r.sample for r in loaded.results]
    assert samples[: acknowledged + 1] == list(range(acknowledged + 1))
    assert samples == list(range(len(samples)))
    assert loaded.metadata.completed_normally is False


def test_empty_results_dir_is_a_clear_error(tmp_path: Path) -> None:
    """A directory without results names itself."""
    with pytest.raises(ArtifactError, match=r"no \*_latest\.json"):
        load_result(tmp_path)


def test_case_block_holds_many_records_in_one_line(tmp_path: Path) -> None:
    """A block of not_run records is one compact line that loads back record for record."""
    path = journal_path(tmp_path, KEY)
    not_run = [
        record(op=f"op{i % 50}", sample=i, status=Status.NOT_RUN) for i in range(5000)
    ]
    with JournalWriter(path) as journal:
        journal.run_start(metadata())
        journal.case_block(not_run)
        journal.case(record(sample=0))
    assert len(path.read_text().splitlines()) == 3
    assert path.stat().st_size < 100 * 5000
    loaded = load_result(path)
    assert loaded.not_run == not_run
    assert [r.sample for r in loaded.results] == [0]
    assert read_journal(path).case_lines == 5001


def test_lone_surrogate_in_a_message_still_writes_history(tmp_path: Path) -> None:
    """A backend message with a lone surrogate cannot cost the run its canonical result."""
    bad = record(status=Status.ERROR, exception_message="bad \udcff byte")
    write_history(tmp_path, KEY, RunArtifact.from_records(metadata(), [bad]))
    assert load_result(tmp_path).results[0].exception_message == "bad \udcff byte"


def test_snapshot_hold_delays_the_next_write(tmp_path: Path) -> None:
    """After hold(), a write waits out the hold; force still writes at once."""
    writer = SnapshotWriter(latest_path(tmp_path, KEY), min_interval_s=0)

    def build() -> tuple[RunArtifact, int]:
        return RunArtifact.from_records(metadata(), [record()]), 1

    writer.hold(3600)
    assert not writer.maybe_write(build)
    assert writer.maybe_write(build, force=True)
