"""The controlling role: the only process that writes results.

Without xdist it lives beside the executor in the one process; with xdist it is the
controller and learns about cases only from reports (records travel in
``user_properties``) and from `pytest_handlecrashitem` when a worker dies (the
xdist-only hooks are in `xdist_hooks`; the end of a run, from the session's finish on,
in its base class `controller_end.ControllerEnd`).

Inert until a run really starts: configuring, ``--collect-only``, ``--help`` and a
selection that runs no case read at most the journal of a run to resume; the lock,
the journal, the scratch dir and the probe process come at the start of the test loop
when there are cases to run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import (
    ArtifactWriteError,
    CaseRecord,
    JournalContents,
    NextFix,
    NotRunReason,
    RunLock,
    RunLockedError,
    Status,
    case_id_for_node,
    count_outside,
    for_terminal,
    make_run_key,
)

from torchcts_runner.background_plan import BackgroundPlan
from torchcts_runner.casesource import CaseSource, CaseSourceError, load_case_source
from torchcts_runner.controller_end import ControllerEnd
from torchcts_runner.coverage_warmup import CoverageWarmUp
from torchcts_runner.crash_evidence import read_evidence, unusable_marker_path
from torchcts_runner.crash_handling import CrashHandling
from torchcts_runner.crash_recorder import CrashRecorder
from torchcts_runner.device_environment import prepare_environment
from torchcts_runner.device_memory import MemoryTally
from torchcts_runner.hardware import hardware_key
from torchcts_runner.heap import end_start_up, freeze_start_up, keep_no_phase_reports
from torchcts_runner.interrupts import (
    install_interrupt_handlers,
    interrupted_by,
    pending_interrupt,
    raise_if_interrupted,
)
from torchcts_runner.items import (
    RECORD_PROPERTY,
    record_of,
    record_text,
    release_record,
    status_of,
    summary,
)
from torchcts_runner.metadata import build_metadata
from torchcts_runner.probe_cache import ProbePhase, probe_phase
from torchcts_runner.progress import Progress, write_stderr
from torchcts_runner.progress_hooks import fd_writer, own_terminal, watch_progress
from torchcts_runner.recheck_plan import recheck_for
from torchcts_runner.resume import (
    ResumeFindings,
    adopt_stuck_attempt,
    inspect_previous,
)
from torchcts_runner.run_end import no_case_line, write_start_status
from torchcts_runner.run_writer import ResumeError, RunWriter
from torchcts_runner.runlog import runlog_path
from torchcts_runner.selection import CasePlan, SelectionError
from torchcts_runner.settings import RunSettings
from torchcts_runner.worker_choice import WorkerChoice
from torchcts_runner.xdist_hooks import report_worker, worker_exit_status


class ControllerRole(ControllerEnd):
    """Hooks of the process that owns the journal, snapshot, history and report."""

    def __init__(self, config: pytest.Config, settings: RunSettings) -> None:
        self.config = config
        self.settings = settings
        # from the start: a Ctrl-C while xdist starts its workers is not lost
        install_interrupt_handlers()
        prepare_environment(settings.device)  # before workers, children and metadata
        self.hardware_key = hardware_key(settings.device)
        self.run_key = make_run_key(settings.device, self.hardware_key)
        self.controller = RunWriter(
            settings.results_dir,
            build_metadata(settings, self.run_key, self.hardware_key),
            on_record=self._on_record,
            on_phase=lambda phase: self._write(f"TorchCTS: {phase}...\n"),
            junit_all=settings.junit_all,
        )
        self.crashes = CrashRecorder(
            settings, self.run_key, self.hardware_key, self._source_or_none
        )
        self.lock = RunLock(settings.results_dir)
        self._prior: JournalContents | None = None
        self._prior_read = False
        self._findings = ResumeFindings()
        self.handling = CrashHandling(self.controller, self.crashes, settings)
        self.started = False
        self.plan: CasePlan | None = None
        self.local_executor: Any = None  # the local executor, when there is one
        self.in_flight: dict[str, str] = {}  # node id -> worker
        self.progress: Progress | None = None
        self.summary_lines: list[str] = []
        self.carried = 0
        self._accounted = False
        self.deselected: frozenset[str] = frozenset()  # counted outside, not expected
        self.background = BackgroundPlan(self._compute_plan)
        self.workers: WorkerChoice | None = None  # how the cases run, and why
        self.probes: ProbePhase | None = None
        self.backend_unusable = False  # the import or device probe failed
        self.write_error: ArtifactWriteError | None = None  # the disk is full
        self.session: pytest.Session | None = None
        self.memory = MemoryTally()  # device memory per executing process
        self.coverage = CoverageWarmUp(
            settings.case_source, wanted=not settings.is_subset
        )

    # -- before the run: read-only --------------------------------------------------

    @property
    def source(self) -> CaseSource:
        """The case source (imported on first use: it imports torch)."""
        try:
            return load_case_source(self.settings.case_source)
        except CaseSourceError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _source_or_none(self) -> CaseSource | None:
        try:
            return load_case_source(self.settings.case_source)
        except CaseSourceError:
            return None

    def prior(self) -> JournalContents | None:
        """The journal this run resumes (read once, checked, nothing written)."""
        if not self._prior_read:
            self._prior_read = True
            try:
                self._prior = self.controller.read_prior(resume=self.settings.resume)
            except ResumeError as exc:
                raise pytest.UsageError(f"--resume: {exc}") from None
            if self._prior is not None:
                runlog = runlog_path(self.settings.results_dir, self.run_key)
                if pending_interrupt() is not None:  # finishing a stuck attempt
                    self.in_flight.update(adopt_stuck_attempt(self._prior, runlog))
                self._findings = inspect_previous(
                    self._prior, runlog, self.controller.scratch
                )
        return self._prior

    def _check_prior_fits(self, plan: CasePlan) -> None:
        """A resumed journal records only cases this run plans (or records as not
        run): a record of any other case would pass into the result unrun. It means
        the journal was edited, or the manifest or selection changed since."""
        prior = self.prior()
        if prior is None:
            return
        known = {*plan.planned_ids, *(r.case_id for r in plan.not_run)}
        foreign = sorted(set(prior.records) - known)
        if foreign:
            raise pytest.UsageError(
                f"--resume: the journal records {len(foreign)} case(s) this run does "
                f"not plan (first: {for_terminal(foreign[0], keep_newlines=False)}): "
                "it was edited, or the manifest or selection changed since; start a "
                "fresh run in another --results"
            )

    @property
    def done(self) -> frozenset[str]:
        """Cases a resumed run does not run again (recorded, or crashed in the
        previous attempt with evidence)."""
        prior = self.prior()
        if prior is None:
            return frozenset()
        executed = {
            k for k, r in prior.records.items() if r.status is not Status.NOT_RUN
        }
        return frozenset(executed | {c[0] for c in self._findings.crashed})

    @property
    def plan_file(self) -> Path:
        """Where this controller hands its plan to the xdist workers."""
        return self.background.path

    def start_planning(self) -> None:
        """Select in a thread while xdist workers start (`background_plan`)."""
        self.background.start()

    def _plan(self) -> CasePlan:
        if self.local_executor is not None and self.local_executor.plan is not None:
            return self.local_executor.plan  # type: ignore[no-any-return]
        if self.background.started:
            return self.background.result()
        return self._compute_plan()

    def note_workers(self, choice: WorkerChoice) -> None:
        """Record how this run executes its cases (metadata, header line)."""
        self.workers = choice
        self.controller.metadata.options["workers"] = choice.to_dict()

    def _compute_plan(self) -> CasePlan:
        try:
            recheck = recheck_for(self.settings)
            return self.settings.plan(self.source, self.done, recheck)
        except SelectionError as exc:
            raise pytest.UsageError(str(exc)) from None

    # -- the start of a real run ------------------------------------------------------

    def _on_record(self, record: CaseRecord) -> None:
        if self.progress is not None:
            self.progress.add(record.status, record.case_id)

    def _begin(self, session: pytest.Session) -> None:
        """Lock, journal, resume findings, isolation decisions, probes."""
        s = self.settings
        try:
            self.lock.acquire(self.controller.metadata.command)
        except RunLockedError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.started = True
        unusable_marker_path(self.controller.scratch).unlink(missing_ok=True)
        prior = self.prior()
        self.carried = len(self.done)  # said at the end, an interrupted one included
        self.handling.decide_adaptive()
        try:
            self.controller.open(prior)
        except ArtifactWriteError as exc:
            self.started = False
            self.lock.release()
            pytest.exit(f"TorchCTS: {exc}", returncode=pytest.ExitCode.INTERNAL_ERROR)
        if prior is not None:
            self.handling.apply_findings(self._findings, prior)
        status_file = self.config.getoption("torchcts_status_file")
        if status_file and self.workers is not None:
            write_start_status(Path(status_file), self.workers.to_dict())
        self.handling.publish()
        install_interrupt_handlers()
        raise_if_interrupted()  # one that arrived during start-up ends the run here
        executor = self.local_executor
        self.probes = probe_phase(
            s,
            self.run_key,
            self.controller.metadata.torch_version,
            executes_here=executor is not None and s.isolate != "all",
            pooled=executor.pooled_probes
            if executor is not None and s.isolate == "all"
            else None,
        )

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtestloop(
        self, session: pytest.Session
    ) -> Generator[None, None, None]:
        """Before any case runs: lock, journal, plan, not_run accounting, progress."""
        if self.config.option.collectonly:
            yield
            return
        self.session = session
        self.plan = self._plan()
        self._check_prior_fits(self.plan)
        nothing = (
            not session.items
            if self.local_executor is not None
            else not self.plan.to_run
        )
        if nothing and self.prior() is None:
            self.summary_lines = [
                no_case_line(
                    self.settings.selection_words(), len(self.plan.to_run), None
                )
            ]
            yield  # no case runs: results/ stays exactly as it was
            return
        self._begin(session)
        for spec in self.plan.planned:
            self.crashes.specs[spec.case_id] = spec
        self.controller.add_not_run(self.plan.not_run)
        self.controller.set_outside(self.plan.outside_by_reason())
        left_out = len(self.plan.to_run) - len(session.items)
        if self.local_executor is not None and left_out > 0:  # -k, -m, a plugin
            self.account_collected(item.nodeid for item in session.items)
        freeze_start_up()  # the plan and its accounting live to the end
        keep_no_phase_reports(self.config.pluginmanager.get_plugin("terminalreporter"))
        if self.local_executor is None:
            end_start_up()  # the cases run in workers: nothing more to import here
        live = sys.stderr.isatty() and not self.settings.quiet
        live = live and self.config.get_verbosity() <= 0
        total = (
            len(self.plan.to_run) if self.local_executor is None else len(session.items)
        )
        write: Callable[[str], None] = write_stderr
        ticking = self.local_executor is None
        terminal = None if ticking else own_terminal(self.config)
        if terminal is not None:  # cases run here: the ticker writes past the capture
            write, ticking = fd_writer(terminal), True
        self.progress = Progress(total, write, live=live)
        watch_progress(self.config, self.progress, ticking=ticking, terminal=terminal)
        if self.controller.previous_journal_note:
            self._write(f"TorchCTS: {self.controller.previous_journal_note}\n")
        if self.workers is not None:
            self._write(f"TorchCTS: {self.workers.described()}\n")
        yield

    def account_collected(self, node_ids: Iterable[str]) -> None:
        """Planned cases that pytest deselected (-k, -m, node ids) are counted as
        outside the run (filtered_by_selection), as the level's are: a table of
        counts, no record per case."""
        if self._accounted or self.plan is None or not self.started:
            return
        self._accounted = True
        collected = {case_id_for_node(n) for n in node_ids}
        if self.progress is not None:
            self.progress.total = len(collected)
        done = self.done
        outside = self.plan.outside
        deselected = set()
        for spec in self.plan.planned:
            if spec.case_id in collected or spec.case_id in done:
                continue
            # counted by reason, as selection counts what lies outside the level
            reason = NotRunReason.FILTERED_BY_SELECTION
            count_outside(outside, spec.suite, spec.op, spec.dtype, reason)
            deselected.add(spec.case_id)
        # a counted case is accounted for: the run is complete without its record
        self.deselected = frozenset(deselected)
        self.controller.set_outside(self.plan.outside_by_reason())

    # -- during the run -----------------------------------------------------------------

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: object) -> None:
        """Track cases in flight (for an interrupted run's diagnostic)."""
        if self.started and case_id_for_node(nodeid) is not None:
            self.in_flight[nodeid] = "main"
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            self.crashes.note_start(
                nodeid, f"{stamp} (seen by the controller) {nodeid}"
            )

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Journal the record a case's report carries, before the next is handled."""
        case_id = case_id_for_node(report.nodeid)
        if case_id is None or not self.started:
            return
        if report.when == "setup":
            self.in_flight[report.nodeid] = report_worker(report) or "main"
        carried = record = record_of(report)
        if record is None:
            record = self._record_without_data(case_id, report)
            if record is None:
                return
        if self.write_error is not None:
            return  # the disk is full: what is journaled stays; the rest reruns
        if (
            record.status is Status.CRASHED
            and record.crash
            and not record.crash.evidence
        ):
            record = self.crashes.with_evidence(record, defer_repro=True)
        try:
            self.controller.record(record)
        except ArtifactWriteError as exc:
            self._stop_writing(exc)
            return
        if carried is not None:
            release_record(report, record)
        self.in_flight.pop(report.nodeid, None)
        if self.probes is not None:
            self.probes.begin()  # a case has ended: the workers have started (once)
        self.coverage.start()  # the same moment, once: see coverage_warmup

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
        return self.crashes.record(
            case_id,
            status=status,
            detail=f"{detail}: {_last_line(report.longrepr)}"[:500],
            next_fix=NextFix.CONFIGURATION
            if status is Status.ERROR
            else NextFix.MISSING_EVIDENCE,
            worker=report_worker(report),
        )

    @pytest.hookimpl
    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, str] | None:
        """Terminal words for the seven statuses; letters are replaced by progress.
        xdist's report of a worker that left to be replaced counts as nothing."""
        if getattr(report, "torchcts_replacement", False):
            return "", "", ""
        status = status_of(report)
        if status is None:
            return None
        return status, "", status.upper()

    def hard_timeout(self, node_id: str, limit_s: float) -> None:
        """Without xdist: the watchdog is about to end this process; journal first."""
        case_id = case_id_for_node(node_id)
        if case_id is None or not self.started:
            return
        crash, fault = read_evidence(self.controller.scratch, "main", node_id, None)
        self.controller.record(self.crashes.crashed(case_id, crash, "main", fault))
        self.controller.close()

    def handle_worker_crash(self, node_id: str, report: Any, node: Any) -> None:
        """An xdist worker died in `node_id`: an honest crashed record, or a retry.

        A death with evidence of its own (a fatal-signal dump, a timeout, an exit
        status) is the case's crash, and the rest of its op runs isolated from now
        on. A death that something else may have caused (SIGKILL, SIGTERM, no trace)
        is retried once, isolated, at the end of the run. A worker that left on
        purpose after the case (its device broke) is only replaced. During an
        interrupt the controller is ending its workers itself: their cases are in
        flight, not crashed.
        """
        case_id = case_id_for_node(node_id)
        if case_id is None or not self.started or interrupted_by() is not None:
            return
        self.in_flight.pop(node_id, None)
        worker = str(node.gateway.id)
        replaced = self.handling.worker_replaced(case_id, worker)
        if replaced is not None:  # the case's own record is journaled already
            report.longrepr = f"{node_id}: {replaced}"
            report.torchcts_replacement = True  # not a second result of the case
            self._write(f"TorchCTS: {replaced}\n")
            return
        ending = self.handling.worker_died(case_id, worker, worker_exit_status(node))
        if isinstance(ending, str):  # retried at the end: no record yet
            report.longrepr = f"{node_id}: {ending}"
            return
        report.user_properties = [
            *getattr(report, "user_properties", []),
            (RECORD_PROPERTY, record_text(ending)),
        ]
        report.longrepr = f"{node_id}: {summary(ending)}"


def _last_line(longrepr: object) -> str:
    """The reason a setup or teardown report gives. A skip's is pytest's (path,
    line, message) triple (a list once xdist carried it): the message alone, since
    the path is this machine's and the record is meant to be shared."""
    if isinstance(longrepr, tuple | list) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    text = str(longrepr or "").strip().splitlines()
    return text[-1] if text else ""


__all__ = ["ControllerRole"]
