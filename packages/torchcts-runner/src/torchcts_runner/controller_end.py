"""The controlling role's end of a run, and what it says on the way.

Retries of deaths that need one, the probe table, history, reference and reports
(`RunWriter.finish`), the coverage refresh of a full run, the status file
``torchcts-run`` reads for its exit status, and the summary lines. A base class of
`ControllerRole` (`controller_hooks`), which owns the state declared here and sets it
while the run starts and goes.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import ArtifactWriteError, RunLock, for_terminal

from torchcts_runner.background_plan import BackgroundPlan
from torchcts_runner.casesource import load_case_source
from torchcts_runner.classify import exception_type_name
from torchcts_runner.coverage_warmup import CoverageWarmUp
from torchcts_runner.crash_evidence import device_unusable
from torchcts_runner.crash_handling import CrashHandling
from torchcts_runner.crash_recorder import CrashRecorder
from torchcts_runner.device_memory import MemoryTally
from torchcts_runner.heap import freeze_for_exit
from torchcts_runner.interrupts import interrupted_by
from torchcts_runner.metadata import MEMORY_OPTION
from torchcts_runner.probe_cache import ProbePhase, backend_unusable
from torchcts_runner.probes import probe_counts, write_failures
from torchcts_runner.progress import Progress, write_stderr
from torchcts_runner.recheck_report import recheck_lines
from torchcts_runner.resume import INTERRUPTED
from torchcts_runner.run_end import (
    no_case_line,
    shown,
    signal_label,
    stopped_line,
    summary_lines,
    write_status,
)
from torchcts_runner.run_writer import FinishSummary, RunWriter
from torchcts_runner.selection import CasePlan
from torchcts_runner.settings import RunSettings
from torchcts_runner.worker_choice import WorkerChoice


class ControllerEnd:
    """The end of a run for `ControllerRole`: its hooks from the session's finish on."""

    # the role's state (set by ControllerRole) that the end reads and sets
    config: pytest.Config
    settings: RunSettings
    run_key: str
    controller: RunWriter
    crashes: CrashRecorder
    handling: CrashHandling
    lock: RunLock
    background: BackgroundPlan
    coverage: CoverageWarmUp
    memory: MemoryTally
    started: bool
    plan: CasePlan | None
    deselected: frozenset[str]
    local_executor: Any
    in_flight: dict[str, str]
    progress: Progress | None
    probes: ProbePhase | None
    workers: WorkerChoice | None
    backend_unusable: bool
    write_error: ArtifactWriteError | None
    session: pytest.Session | None
    summary_lines: list[str]
    carried: int  # cases an earlier session of a resumed run recorded

    def _write(self, text: str) -> None:
        (self.progress.say if self.progress is not None else write_stderr)(text)

    def _stop_writing(self, exc: ArtifactWriteError) -> None:
        """A write failed (disk full, read-only...): say so once and stop the run.

        Every record journaled before it stays; `--resume` continues once there is
        space. The cases still running are not recorded, so they run again then.
        """
        self.write_error = exc
        self._write(
            f"TorchCTS: {for_terminal(str(exc), keep_newlines=False)}; the journal "
            "keeps every case finished before it: free space, then continue with "
            "--resume\n"
        )
        message = "results could not be written"
        if self.session is not None:
            self.session.shouldstop = message
        dsession = self.config.pluginmanager.get_plugin("dsession")
        if dsession is not None:
            dsession.shouldstop = message

    def _print_probes(self) -> None:
        if self.probes is None:
            return
        rows, table = self.probes.finish()
        self.probes = None
        counts = probe_counts(rows)
        self.backend_unusable = backend_unusable(rows)
        self.controller.set_probe_counts(counts)
        self.controller.diagnostic("probes", {"counts": counts, "rows": rows})
        write_failures(self.settings.results_dir, self.run_key, os.getpid(), rows)
        self._write(for_terminal(table) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_sessionfinish(
        self, session: pytest.Session, exitstatus: int
    ) -> Generator[None, None, None]:
        """History, reference and report at the end (a snapshot when incomplete)."""
        self.background.remove()
        if not self.started:
            yield
            return
        self._finish(session, exitstatus)
        yield
        self.lock.release()

    def _finish(self, session: pytest.Session, exitstatus: int) -> None:
        freeze_for_exit()  # the records and imports live to the exit: no rescans
        signum = interrupted_by()
        interrupted = (
            signum is not None
            or exitstatus == pytest.ExitCode.INTERRUPTED
            or bool(session.shouldstop)
        )
        # an executing process found a device that never worked and stopped the run
        unusable = device_unusable(self.controller.scratch) if interrupted else None
        if not interrupted:
            self.handling.run_retries()
        if self.probes is not None:
            if interrupted and unusable is None:
                self.probes.kill()
                self.probes = None
            else:
                self._print_probes()  # for an unusable device: its evidence
        if unusable is not None:
            self.backend_unusable = True
        if self.progress is not None:
            self.progress.close()
        self.crashes.wait_for_repros()
        planned = self.plan.planned_ids if self.plan is not None else []
        expected = [c for c in planned if c not in self.deselected]
        name = signal_label(signum)
        if self.local_executor is not None:
            self.memory.add("main", self.local_executor.memory_stats())
        self.controller.set_option(MEMORY_OPTION, self.memory.as_option())
        coverage: list[str] = []

        def meanwhile(complete: bool) -> None:  # while the reports render
            if complete and not interrupted and not self.settings.is_subset:
                coverage.extend(self._refresh_coverage())

        try:
            if interrupted and self.in_flight and self.write_error is None:
                self.controller.diagnostic(INTERRUPTED, sorted(self.in_flight))
            done = self.controller.finish(
                expected,
                interrupted=interrupted or self.write_error is not None,
                interrupted_by=name,
                meanwhile=meanwhile,
            )
        except ArtifactWriteError as exc:
            self.controller.close()
            if self.write_error is None:
                self._stop_writing(exc)
            self._write_status(None, complete=False)
            self.summary_lines = [f"TorchCTS {self.run_key}: {exc}"]
            return
        self._write_status(done, complete=done.complete)
        self.summary_lines = summary_lines(
            self.run_key,
            done,
            interrupted=interrupted and unusable is None,
            signum=signum,
            in_flight=len(self.in_flight),
            carried=self.carried,
        )
        if unusable is not None:
            self.summary_lines.insert(1, stopped_line(unusable))
        self.summary_lines += coverage
        if self.settings.recheck and self.plan is not None and not interrupted:
            self.summary_lines += recheck_lines(
                self.settings, self.run_key, self.plan, self.controller.records
            )
        if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            if self.settings.resume and done.complete:
                session.exitstatus = pytest.ExitCode.OK
            elif self.plan is not None:  # xdist workers deselected every case
                self.summary_lines.append(
                    no_case_line(
                        self.settings.selection_words(),
                        len(self.plan.to_run),
                        shown(self.settings.results_dir),
                    )
                )

    def _refresh_coverage(self) -> list[str]:
        """results/coverage/ from the case source's cached trace, as the results page
        lists it among a full run's files; a failure there never fails the run."""
        self.coverage.wait()
        try:
            source = load_case_source(self.settings.case_source)
            # the folder as the reports line shows it: relative here, no host path
            line = source.refresh_coverage(Path(shown(self.settings.results_dir)))
        except Exception as exc:  # the run's own results are written already
            return [f"coverage: not refreshed ({exception_type_name(exc)}: {exc})"]
        return [line] if line else []

    def _write_status(self, done: FinishSummary | None, *, complete: bool) -> None:
        """Tell torchcts-run how the session really ended (its exit status)."""
        status_file = self.config.getoption("torchcts_status_file")
        if status_file:
            write_status(
                Path(status_file),
                done,
                complete=complete,
                signum=interrupted_by(),
                results_dir=self.settings.results_dir,
                backend_unusable=self.backend_unusable,
                write_error=str(self.write_error) if self.write_error else None,
                run_key=self.run_key,
                workers=self.workers.to_dict() if self.workers else None,
            )

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The run's counts and where its report is."""
        for line in self.summary_lines:
            terminalreporter.write_line(for_terminal(line))


__all__ = ["ControllerEnd"]
