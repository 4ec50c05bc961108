"""The journal controller: the only writer of a run's results.

It opens (or resumes) the journal, appends one record per finished case before the
next is handled, keeps a rate-limited recovery snapshot, and at the end writes the
canonical history, the latest reference and the report. No pytest import: the plugin
feeds it records, tests can drive it directly.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from torchcts_schema import (
    REPORT_SUFFIXES,
    ArtifactError,
    ArtifactWriteError,
    CaseRecord,
    JournalContents,
    JournalWriter,
    ResultsLayout,
    RunArtifact,
    RunMetadata,
    SharedTexts,
    SnapshotWriter,
    Status,
    count_statuses,
    journal_path,
    latest_path,
    read_journal,
    write_history,
)

from torchcts_runner.crash_evidence import scratch_dir
from torchcts_runner.report import finish_report, start_report
from torchcts_runner.resume import resume_differences
from torchcts_runner.runlog import RunLog, runlog_path


def now_iso() -> str:
    """UTC time, second precision, ``Z`` suffix."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ResumeError(Exception):
    """--resume cannot continue this journal (say why, name the file)."""


@dataclass
class FinishSummary:
    """What the end of a run produced."""

    complete: bool
    missing: int
    report: Path | None
    report_note: str
    history: Path | None
    counts: dict[str, int]
    reports: tuple[Path, ...] = ()  # every report file written (.md, .html, .junit.xml)
    fallback_passed: int = 0  # passed cases that ran through the device's CPU fallback


class RunWriter:
    """Owns the journal, snapshot, runlog and final artifacts of one run key."""

    def __init__(
        self,
        results_dir: Path,
        metadata: RunMetadata,
        *,
        snapshot_interval_s: float = 5.0,
        on_record: Callable[[CaseRecord], None] | None = None,
        on_phase: Callable[[str], None] | None = None,
        junit_all: bool = False,
    ) -> None:
        self.results_dir = results_dir
        self.metadata = metadata
        self.run_key = metadata.run_key
        self.layout = ResultsLayout(results_dir, metadata.run_key)
        self.records: dict[str, CaseRecord] = {}
        # the JSON texts of each journaled record's tolerance and surfaces, noted
        # during the case phase so the history does not encode them again at the end
        self.texts = SharedTexts()
        self.diagnostics: dict[str, object] = {}
        self.journal_cases = 0
        self._on_record = on_record
        self._on_phase = on_phase
        self._junit_all = junit_all
        self._interval = snapshot_interval_s
        self.journal: JournalWriter | None = None
        self.snapshots: SnapshotWriter | None = None
        self.runlog: RunLog | None = None
        self.previous_journal_note: str | None = None
        self._began: float | None = None
        self._first_snapshot_due = True

    def phase(self, phase: str) -> None:
        """Say what the end of the run is doing (it can take a while after the last
        case: retries, history, report rendering), so the terminal is not silent."""
        if self._on_phase is not None:
            self._on_phase(phase)

    @property
    def journal_file(self) -> Path:
        """``<key>_journal.jsonl``."""
        return journal_path(self.results_dir, self.run_key)

    @property
    def scratch(self) -> Path:
        """Per-run working files (fault handler output, watchdog markers)."""
        return scratch_dir(self.results_dir, self.run_key)

    def read_prior(self, *, resume: bool) -> JournalContents | None:
        """The journal this run continues (``--resume``), checked, without writing.

        Refuses (`ResumeError`, naming what differs) a journal written under another
        manifest, backend options or fault profile, torch version or selection.
        """
        path = self.journal_file
        if resume and not path.exists():  # a wrong --results would rerun everything
            self.previous_journal_note = (
                f"--resume: no journal of {self.run_key} in this results folder, so "
                "nothing to continue: this is a fresh run (check --results)"
            )
        if not resume or not path.exists():
            return None
        try:
            prior = read_journal(path)
        except ArtifactError as exc:
            raise ResumeError(str(exc)) from None
        if prior.metadata is not None:
            differences = resume_differences(prior.metadata, self.metadata)
            if differences:
                raise ResumeError(
                    f"{path.name} was written by a run that differs from this one: "
                    + "; ".join(differences)
                    + " (resume needs the same run; start a fresh one without --resume)"
                )
        return prior

    def open(self, prior: JournalContents | None) -> None:
        """Start the journal: fresh (the old one kept as ``.prev``) or continued.

        Any failure to write (a full disk, a read-only directory) is one
        `ArtifactWriteError` naming the path.
        """
        try:
            self._open(prior)
        except ArtifactWriteError:
            raise
        except OSError as exc:
            raise ArtifactWriteError(exc.filename or self.results_dir, exc) from None

    def _open(self, prior: JournalContents | None) -> None:
        self.results_dir.mkdir(parents=True, exist_ok=True)
        path = self.journal_file
        if prior is not None:
            if prior.metadata is not None:
                self.metadata = replace(
                    self.metadata,
                    started_at=prior.metadata.started_at,
                    resumes=prior.metadata.resumes + 1,
                    active_s=prior.metadata.active_s,
                )
            self.records = dict(prior.records)
            self.diagnostics.update(prior.diagnostics)
            self.journal_cases = prior.case_lines
        elif path.exists():
            self._rotate_previous(path)
        self._began = time.monotonic()
        self.journal = JournalWriter(path)
        self.journal.run_start(self.metadata, resumed=prior is not None)
        self.snapshots = SnapshotWriter(
            latest_path(self.results_dir, self.run_key),
            min_interval_s=self._interval,
            known=self.texts,
        )
        self.runlog = RunLog(runlog_path(self.results_dir, self.run_key))
        self.scratch.mkdir(parents=True, exist_ok=True)
        self._first_snapshot_due = True

    def _rotate_previous(self, path: Path) -> None:
        """A fresh run keeps the previous journal beside it, never appends to it."""
        try:
            ended = read_journal(path).ended
        except ArtifactError:
            ended = False
        keep = self.layout.journal_prev
        path.replace(keep)
        if not ended:
            self.previous_journal_note = (
                f"the previous run of {self.run_key} did not finish; its journal is kept "
                f"as {keep.name} (use --resume to continue a run instead of restarting)"
            )
        runlog = runlog_path(self.results_dir, self.run_key)
        if runlog.exists():  # adaptive isolation reads the set-aside runlog
            runlog.replace(self.layout.runlog_prev)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def executed_ids(self) -> set[str]:
        """Cases that already have a result other than not_run."""
        return {k for k, r in self.records.items() if r.status is not Status.NOT_RUN}

    def diagnostic(self, name: str, value: object) -> None:
        """A run-level diagnostic, journaled at once."""
        self.diagnostics[name] = value
        assert self.journal is not None
        self.journal.diagnostic(name, value)

    def set_probe_counts(self, counts: dict[str, int]) -> None:
        """Probe pass/fail/total counts for the run metadata."""
        self.metadata = replace(self.metadata, probes=dict(counts))

    def set_option(self, name: str, value: object) -> None:
        """One more run metadata option, known only at the end (None: left out)."""
        options = {k: v for k, v in self.metadata.options.items() if k != name}
        if value is not None:
            options[name] = value
        self.metadata = replace(self.metadata, options=options)

    def set_outside(self, totals: dict[str, int]) -> None:
        """A subset run's counts of the cases outside it, by reason (no records)."""
        self.metadata = replace(self.metadata, outside=dict(totals))

    def add_not_run(self, records: Iterable[CaseRecord]) -> None:
        """Selection accounting; a record already identical in the journal is kept."""
        assert self.journal is not None
        executed = self.executed_ids()
        fresh = [
            record
            for record in records
            if record.case_id not in executed
            and self.records.get(record.case_id) != record
        ]
        # one compact line for the whole selection: a full OpInfo universe is
        # hundreds of thousands of records, far too many for a line each
        self.journal.case_block(fresh)
        self.journal_cases += len(fresh)
        for record in fresh:
            self.records.pop(record.case_id, None)
            self.records[record.case_id] = record

    def record(self, record: CaseRecord, *, notify: bool = True) -> None:
        """Journal one finished case now, then maybe refresh the snapshot."""
        assert self.journal is not None and self.snapshots is not None
        self.journal.case(record)
        self.texts.note(record)
        self.journal_cases += 1
        self.records.pop(record.case_id, None)
        self.records[record.case_id] = record
        if notify and self._on_record is not None:
            self._on_record(record)
        # a recovery snapshot exists from the first finished case on; after it the
        # writer waits >= 40x a snapshot's cost: under ~2.5% of a large run's time
        self.snapshots.maybe_write(self._snapshot, force=self._first_snapshot_due)
        self._first_snapshot_due = False

    def active_seconds(self) -> float:
        """Time spent running, over this attempt and every one it resumes."""
        spent = time.monotonic() - self._began if self._began is not None else 0.0
        return round((self.metadata.active_s or 0.0) + spent, 3)

    def _final_metadata(
        self, complete: bool, interrupted_by: str | None = None
    ) -> RunMetadata:
        return replace(
            self.metadata,
            ended_at=now_iso(),
            completed_normally=complete,
            counts=count_statuses(list(self.records.values())),
            active_s=self.active_seconds(),
            interrupted_by=interrupted_by,
        )

    def _artifact(self, metadata: RunMetadata) -> RunArtifact:
        return RunArtifact.from_records(
            metadata, list(self.records.values()), dict(self.diagnostics)
        )

    def _snapshot(self) -> tuple[RunArtifact, int]:
        metadata = replace(
            self.metadata, counts=count_statuses(list(self.records.values()))
        )
        return self._artifact(metadata), self.journal_cases

    def finish(
        self,
        expected: Iterable[str],
        *,
        interrupted: bool,
        interrupted_by: str | None = None,
        meanwhile: Callable[[bool], None] | None = None,
    ) -> FinishSummary:
        """End the run: history and reference when complete, the report always.

        The report renders in its own process; `meanwhile` (told whether the run is
        complete) is work the caller does while it renders, on the other core.
        """
        assert self.journal is not None and self.snapshots is not None
        missing = [c for c in expected if c not in self.records]
        complete = not missing and not interrupted
        metadata = self._final_metadata(complete, interrupted_by)
        self.metadata = metadata
        # built once for history and report: at level 4 it sorts every record
        artifact = self._artifact(metadata)
        history = None
        if complete:
            self.journal.run_end(metadata)
            self.phase("writing history")
            history = write_history(
                self.results_dir, self.run_key, artifact, self.texts
            )
        else:
            self.phase("writing the snapshot")
            self.snapshots.maybe_write(
                lambda: (artifact, self.journal_cases), force=True
            )
        self.phase("rendering reports")
        job = start_report(
            self.results_dir, self.run_key, artifact, junit_all=self._junit_all
        )
        try:
            if meanwhile is not None:
                meanwhile(complete)
        finally:
            report, note = finish_report(job)
        self.close()
        if complete:
            shutil.rmtree(self.scratch, ignore_errors=True)
        reports = tuple(
            path
            for path in (self.layout.report(s) for s in REPORT_SUFFIXES)
            if path.exists()
        )
        fallback_passed = sum(
            1
            for r in self.records.values()
            if r.cpu_fallback and r.status is Status.PASSED
        )
        return FinishSummary(
            complete,
            len(missing),
            report,
            note,
            history,
            metadata.counts,
            reports,
            fallback_passed,
        )

    def close(self) -> None:
        """Close files; safe twice."""
        if self.journal is not None:
            self.journal.close()
        if self.runlog is not None:
            self.runlog.close()


__all__ = ["FinishSummary", "ResumeError", "RunWriter", "now_iso"]
