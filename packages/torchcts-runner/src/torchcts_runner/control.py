"""The controlling role: the only process that writes results.

Without xdist it lives beside the executor in the one process; with xdist it is the
controller and learns about cases only from reports (records travel in
``user_properties``) and from `pytest_handlecrashitem` when a worker dies (the
xdist-only hooks are in `xdist_hooks`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import (
    CaseRecord,
    NextFix,
    NotRunReason,
    Status,
    case_id_for_node,
    make_run_key,
    node_id_for_case,
    write_atomic,
)

from torchcts_runner.casesource import CaseSource, CaseSourceError, load_case_source
from torchcts_runner.controller import ResumeError, RunController
from torchcts_runner.crashes import read_evidence
from torchcts_runner.crashrecords import CrashRecorder
from torchcts_runner.hardware import hardware_key
from torchcts_runner.items import RECORD_PROPERTY, record_of, record_text, summary
from torchcts_runner.metadata import build_metadata
from torchcts_runner.options import RunSettings
from torchcts_runner.planfile import plan_file_path, write_plan, write_plan_error
from torchcts_runner.probes import ProbeRun, format_table, probe_counts, write_failures
from torchcts_runner.progress import Progress
from torchcts_runner.resume import INTERRUPTED, crashed_from_runlog
from torchcts_runner.runlog import runlog_path
from torchcts_runner.selection import CasePlan, SelectionError, plan_cases
from torchcts_runner.xdist_hooks import report_worker, worker_exit_status


class ControllerRole:
    """Hooks of the process that owns the journal, snapshot, history and report."""

    def __init__(self, config: pytest.Config, settings: RunSettings) -> None:
        self.config = config
        self.settings = settings
        self.hardware_key = hardware_key(settings.device)
        self.run_key = make_run_key(settings.device, self.hardware_key)
        self.controller = RunController(
            settings.results_dir,
            build_metadata(settings, self.run_key, self.hardware_key),
            on_record=self._on_record,
        )
        self.crashes = CrashRecorder(
            settings, self.run_key, self.hardware_key, self._source_or_none
        )
        try:
            prior = self.controller.open(resume=settings.resume)
        except ResumeError as exc:
            raise pytest.UsageError(f"--resume: {exc}") from None
        if prior is not None:
            for record in crashed_from_runlog(
                prior,
                runlog_path(settings.results_dir, self.run_key),
                self.controller.scratch,
                self.crashes.crashed,
            ):
                self.controller.record(record, notify=False)
        self.done = frozenset(self.controller.executed_ids())
        self.plan: CasePlan | None = None
        self.local_executor: Any = None  # the local executor, when there is one
        self.in_flight: set[str] = set()
        self.progress: Progress | None = None
        self.summary_lines: list[str] = []
        self._accounted = False
        self._plan_thread: threading.Thread | None = None
        self._planned: CasePlan | None = None
        self._plan_error: BaseException | None = None
        self.probes: ProbeRun | None = ProbeRun(settings.manifest.path, settings.device)

    @property
    def source(self) -> CaseSource:
        """The case source (imported on first use: it imports torch)."""
        try:
            return load_case_source(self.settings.case_source)
        except CaseSourceError as exc:
            raise pytest.UsageError(str(exc)) from None

    @property
    def plan_file(self) -> Path:
        """Where this controller hands its plan to the xdist workers."""
        return plan_file_path(self.controller.scratch)

    def _source_or_none(self) -> CaseSource | None:
        try:
            return load_case_source(self.settings.case_source)
        except CaseSourceError:
            return None

    def _write(self, text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    def _on_record(self, record: CaseRecord) -> None:
        if self.progress is not None:
            self.progress.add(record.status)

    def start_planning(self) -> None:
        """Select cases in a thread while xdist workers start, then hand them the plan.

        Selection imports torch and the case catalogue (seconds); overlapping it with
        worker start-up keeps the controller off the path to the first case, and the
        plan file spares every worker its own selection.
        """
        self.plan_file.unlink(missing_ok=True)

        def work() -> None:
            try:
                self._planned = self._compute_plan()
                write_plan(self.plan_file, self._planned.to_run)
            except BaseException as exc:  # re-raised in the main thread
                self._plan_error = exc
                write_plan_error(self.plan_file, str(exc) or repr(exc))

        self._plan_thread = threading.Thread(
            target=work, name="torchcts-plan", daemon=True
        )
        self._plan_thread.start()

    def _plan(self) -> CasePlan:
        if self.local_executor is not None and self.local_executor.plan is not None:
            return self.local_executor.plan  # type: ignore[no-any-return]
        if self._plan_thread is not None:
            self._plan_thread.join()
            if self._plan_error is not None:
                raise self._plan_error
            assert self._planned is not None
            return self._planned
        return self._compute_plan()

    def _compute_plan(self) -> CasePlan:
        s = self.settings
        node_ids = [a for a in self.config.args if a.startswith("torchcts::")]
        try:
            return plan_cases(
                self.source, s.manifest, level=s.level, dtypes=s.dtypes, suites=s.suites,
                op_globs=s.op_globs, shard=s.shard, done=self.done, node_ids=node_ids,
            )  # fmt: skip
        except SelectionError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _print_probes(self) -> None:
        if self.probes is None:
            return
        rows = self.probes.result()
        self.probes = None
        counts = probe_counts(rows)
        self.controller.set_probe_counts(counts)
        self.controller.diagnostic("probes", {"counts": counts, "rows": rows})
        write_failures(self.settings.results_dir, self.run_key, os.getpid(), rows)
        lines = [f"TorchCTS probes ({counts['pass']}/{counts['total']} pass):"]
        self._write("\n".join([*lines, *format_table(rows)]) + "\n")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtestloop(
        self, session: pytest.Session
    ) -> Generator[None, None, None]:
        """Before any case runs: probes, the plan, not_run accounting, progress."""
        self._print_probes()
        self.plan = self._plan()
        for spec in self.plan.planned:
            self.crashes.specs[spec.case_id] = spec
        self.controller.add_not_run(self.plan.not_run)
        self.controller.reschedule_snapshot()
        if self.local_executor is not None:
            self.account_collected(item.nodeid for item in session.items)
        live = sys.stderr.isatty() and not self.settings.quiet
        live = live and self.config.get_verbosity() <= 0
        total = (
            len(self.plan.to_run) if self.local_executor is None else len(session.items)
        )
        self.progress = Progress(total, self._write, live=live)
        if self.controller.previous_journal_note:
            self._write(f"TorchCTS: {self.controller.previous_journal_note}\n")
        yield

    def account_collected(self, node_ids: Iterable[str]) -> None:
        """Planned cases that pytest deselected (-k, -m, node ids) become not_run."""
        if self._accounted or self.plan is None:
            return
        self._accounted = True
        collected = {case_id_for_node(n) for n in node_ids}
        if self.progress is not None:
            self.progress.total = len(collected)
        records = []
        for spec in self.plan.planned:
            if spec.case_id in collected or spec.case_id in self.done:
                continue
            records.append(
                CaseRecord(
                    node_id=node_id_for_case(spec.case_id),
                    status=Status.NOT_RUN,
                    not_run_reason=NotRunReason.FILTERED_BY_SELECTION,
                    next_fix=NextFix.SUPPORT_SURFACE,
                    detail="deselected by pytest arguments (-k, -m or node ids)",
                    **self.crashes.base_fields(spec.case_id),  # type: ignore[arg-type]
                )
            )
        self.controller.add_not_run(records)

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        """Track cases in flight (for an interrupted run's diagnostic)."""
        if case_id_for_node(nodeid) is not None:
            self.in_flight.add(nodeid)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Journal the record a case's report carries, before the next is handled."""
        case_id = case_id_for_node(report.nodeid)
        if case_id is None:
            return
        record = record_of(report)
        if record is None:
            record = self._record_without_data(case_id, report)
            if record is None:
                return
        if (
            record.status is Status.CRASHED
            and record.crash
            and not record.crash.evidence
        ):
            record = self.crashes.with_evidence(record, defer_repro=True)
        self.controller.record(record)
        self.in_flight.discard(report.nodeid)

    def _record_without_data(
        self, case_id: str, report: pytest.TestReport
    ) -> CaseRecord | None:
        """A setup/teardown problem (or skip) outside the case's own execution."""
        if report.when == "setup" and report.skipped:
            status, detail = Status.SKIPPED, "skipped before the case ran"
        elif report.failed and report.when in ("setup", "teardown"):
            status, detail = (
                Status.ERROR,
                f"harness problem during pytest {report.when}",
            )
        else:
            return None
        text = str(report.longrepr or "").strip().splitlines()
        return CaseRecord(
            node_id=report.nodeid,
            status=status,
            detail=f"{detail}: {text[-1] if text else ''}"[:500],
            next_fix=NextFix.CONFIGURATION
            if status is Status.ERROR
            else NextFix.MISSING_EVIDENCE,
            worker=report_worker(report),
            **self.crashes.base_fields(case_id),  # type: ignore[arg-type]
        )

    @pytest.hookimpl
    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, str] | None:
        """Terminal words for the seven statuses; letters are replaced by progress."""
        record = record_of(report)
        if record is None:
            return None
        word = record.status.value.upper()
        return record.status.value, "", word

    def hard_timeout(self, node_id: str, limit_s: float) -> None:
        """Without xdist: the watchdog is about to end this process; journal first."""
        case_id = case_id_for_node(node_id)
        if case_id is None:
            return
        crash, fault = read_evidence(self.controller.scratch, "main", node_id, None)
        self.controller.record(self.crashes.crashed(case_id, crash, "main", fault))
        self.controller.close()

    def handle_worker_crash(self, node_id: str, report: Any, node: Any) -> None:
        """An xdist worker died in `node_id`: attach an honest crashed record."""
        case_id = case_id_for_node(node_id)
        if case_id is None:
            return
        worker = str(node.gateway.id)
        crash, fault = read_evidence(
            self.controller.scratch, worker, node_id, worker_exit_status(node)
        )
        record = self.crashes.crashed(case_id, crash, worker, fault, defer_repro=True)
        report.user_properties = [
            *getattr(report, "user_properties", []),
            (RECORD_PROPERTY, record_text(record)),
        ]
        report.longrepr = f"{node_id}: {summary(record)}"

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(
        self, session: pytest.Session, exitstatus: int
    ) -> Generator[None, None, None]:
        """History, reference and report at the end (a snapshot when incomplete)."""
        if self.probes is not None:
            self.probes.kill()
        if self.progress is not None:
            self.progress.close()
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or bool(
            session.shouldstop
        )
        if interrupted and self.in_flight:
            self.controller.diagnostic(INTERRUPTED, sorted(self.in_flight))
        self.crashes.wait_for_repros()
        self.plan_file.unlink(missing_ok=True)
        expected = self.plan.planned_ids if self.plan is not None else []
        done = self.controller.finish(expected, interrupted=interrupted)
        status_file = self.config.getoption("torchcts_status_file")
        if status_file:  # tells torchcts-run the session really ended
            status = {"report": str(done.report), "complete": done.complete}
            write_atomic(Path(status_file), json.dumps(status))
        counts = ", ".join(f"{k} {v}" for k, v in done.counts.items() if v)
        self.summary_lines = [f"TorchCTS {self.run_key}: {counts or 'no cases'}"]
        if not done.complete:
            self.summary_lines.append(
                f"run incomplete: {done.missing} planned case(s) without a record; "
                "continue with --resume"
            )
        self.summary_lines.append(f"report: {done.report} ({done.report_note})")
        if (
            self.settings.resume
            and done.complete
            and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        ):
            session.exitstatus = pytest.ExitCode.OK
        yield

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The run's counts and where its report is."""
        for line in self.summary_lines:
            terminalreporter.write_line(line)


__all__ = ["ControllerRole"]
