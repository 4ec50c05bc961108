"""What the controller does about crashes during a run (no pytest).

After a case crashes its worker, the rest of its op runs isolated for the remainder
of the run; a worker death that something else may have caused (SIGKILL, SIGTERM, no
trace at all) is no evidence against the case, so the case is retried once, isolated,
at the end; a worker that left because its device broke is replaced, not crashed;
adaptive isolation from earlier runs is decided once, before this run's first case;
and what a previous attempt left behind (`resume.ResumeFindings`) becomes records
and retries. Every decision is journaled and published to the executing processes
through the run's decisions file.
"""

from __future__ import annotations

from torchcts_isolate import decide_adaptive, may_be_external, write_adaptive_decisions
from torchcts_schema import CaseRecord, JournalContents, node_id_for_case

from torchcts_runner.crash_evidence import read_evidence
from torchcts_runner.crash_recorder import CrashRecorder
from torchcts_runner.isolation_decisions import IsolationDecisions, op_key
from torchcts_runner.metadata import torch_version
from torchcts_runner.resume import RETRIED, ResumeFindings
from torchcts_runner.retry import retry_isolated
from torchcts_runner.run_writer import RunWriter
from torchcts_runner.settings import RunSettings
from torchcts_runner.worker_replacement import replaced_after

DECISIONS = "isolation_decisions"  # the diagnostic that journals them


class CrashHandling:
    """Isolation decisions and retries of one run, owned by the controller."""

    def __init__(
        self, writer: RunWriter, recorder: CrashRecorder, settings: RunSettings
    ) -> None:
        self.writer = writer
        self.recorder = recorder
        self.settings = settings
        self.decisions = IsolationDecisions()
        self.retries: list[str] = []  # case ids to retry isolated at the end

    def decide_adaptive(self) -> None:
        """Cases that crashed in earlier runs of this run key run isolated (decided
        before this run writes anything, so none of its own crashes count)."""
        s = self.settings
        if s.isolate != "adaptive":
            return
        root = s.results_root
        adaptive = decide_adaptive(
            s.results_dir,
            self.writer.run_key,
            torch_version(),
            crash_records_of=[root] if root and root != s.results_dir else [],
        )
        write_adaptive_decisions(s.results_dir, adaptive)
        self.decisions.adaptive = sorted(adaptive.cases)

    def apply_findings(self, findings: ResumeFindings, prior: JournalContents) -> None:
        """The previous attempt's crashes become records; its vanished cases retry."""
        for case_id, crash, worker, fault in findings.crashed:
            record = self.recorder.crashed(case_id, crash, worker, fault)
            self.writer.record(record, notify=False)
            self.isolate_op_of(record, "crashed in the previous attempt")
        if findings.retry:
            for case_id in findings.retry:
                self.decisions.cases[case_id] = (
                    "its process vanished without evidence in the previous attempt"
                )
            retried = sorted({*(prior.diagnostics.get(RETRIED) or []), *findings.retry})
            self.writer.diagnostic(RETRIED, retried)

    def isolate_op_of(self, record: CaseRecord, why: str) -> None:
        """The rest of this op runs isolated for the remainder of the run."""
        key = op_key(record.suite, record.op)
        if key in self.decisions.ops or self.settings.isolate == "none":
            return
        self.decisions.ops[key] = f"{record.case_id} {why}"
        self.publish()

    def publish(self) -> None:
        """Journal the decisions and hand them to every executing process."""
        d = self.decisions
        if not (d.ops or d.cases or d.adaptive):
            return
        d.write(self.writer.scratch)
        self.writer.diagnostic(DECISIONS, d.to_dict())

    def worker_died(
        self, case_id: str, worker: str, exit_status: int | None
    ) -> CaseRecord | str:
        """An xdist worker died in `case_id`: its crashed record, or, when nothing
        proves the case caused it, the reason it is retried instead."""
        node_id = node_id_for_case(case_id)
        crash, fault = read_evidence(self.writer.scratch, worker, node_id, exit_status)
        if may_be_external(crash) and case_id not in self.retries:
            self.retries.append(case_id)
            return (
                f"its worker died ({crash.detail}) without evidence that the case "
                "caused it; it is retried isolated at the end of the run"
            )
        record = self.recorder.crashed(case_id, crash, worker, fault, defer_repro=True)
        self.isolate_op_of(record, "crashed its worker")
        return record

    def worker_replaced(self, case_id: str, worker: str) -> str | None:
        """Why `worker` left after `case_id` on purpose (its device broke), or None
        when it did not (`worker_replacement`). Its record came first; should it be
        missing, the case is retried isolated at the end like a vanished one."""
        if replaced_after(self.writer.scratch, worker) != case_id:
            return None
        if case_id not in self.writer.records and case_id not in self.retries:
            self.retries.append(case_id)
        return (
            f"worker {worker} left after {case_id} because its device failed a "
            "health probe; a fresh worker takes over its cases (not a crash)"
        )

    def run_retries(self) -> None:
        """Cases whose worker vanished without evidence, once more, isolated."""
        if not self.retries:
            return
        self.writer.phase(f"retrying {len(self.retries)} case(s) isolated")
        before = self.writer.diagnostics.get(RETRIED)
        prior = [str(c) for c in before] if isinstance(before, list) else []
        self.writer.diagnostic(RETRIED, sorted({*prior, *self.retries}))
        for case_id in self.retries:
            if case_id in self.writer.records:
                continue
            spec = self.recorder.specs.get(case_id)
            if spec is not None:
                run_key = self.writer.run_key
                record = retry_isolated(spec, self.settings, run_key, self.recorder)
                self.writer.record(record)


__all__ = ["DECISIONS", "CrashHandling"]
