"""--resume: what an interrupted run left behind, and what it means for each case.

The journal says which cases finished. The runlog says which case each process
started last. A last start without a record is one of:

- a case a user interrupted (the journal's ``interrupted_in_flight`` diagnostic), or
  one an orphaned worker was running when it noticed its controller had died (its
  marker): run again, nothing is blamed;
- a case whose process left evidence that it died in it (a faulthandler fatal-error
  dump, the watchdog's marker, faulthandler's hang dump): ``crashed``, with that
  evidence, and not run again;
- a case whose process vanished without evidence (SIGKILL of a single-process run):
  run again, isolated (a ``retry`` isolation decision), so the record rests on what
  the retry shows. A case that already had its retry and vanished again is crashed.

Resume also refuses to continue a journal written under other conditions: another
manifest, backend options or fault profile, torch version or selection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from torchcts_isolate import may_be_external
from torchcts_schema import CrashInfo, JournalContents, RunMetadata, case_id_for_node

from torchcts_runner.crash_evidence import orphaned_in, read_evidence
from torchcts_runner.runlog import RunlogEntry, read_runlog

INTERRUPTED = "interrupted_in_flight"
RETRIED = "retried_after_vanishing"  # diagnostic: case ids given their isolated retry
# metadata options that change what a case's result means; resume needs them equal
RESUME_KEYS = (
    "level",
    "dtypes",
    "suites",
    "op_globs",
    "shard",
    "validation",
    "case_source",
    "case_timeout_s",
    "backend_options",
    "environment",
    "selection",
)


def resume_differences(prior: RunMetadata, now: RunMetadata) -> list[str]:
    """What differs between the journaled run and this one, in words."""
    out = []
    for name in ("manifest_digest", "torch_version", "device", "torchcts_version"):
        old, new = getattr(prior, name), getattr(now, name)
        if old != new:
            out.append(f"{name} {old!r} -> {new!r}")
    for key in RESUME_KEYS:
        old, new = prior.options.get(key), now.options.get(key)
        if old != new:
            out.append(f"{key} {old!r} -> {new!r}")
    return out


@dataclass
class ResumeFindings:
    """What the previous attempt's last starts mean for this one."""

    crashed: list[tuple[str, CrashInfo, str, str]] = field(default_factory=list)
    rerun: list[str] = field(default_factory=list)  # case ids, nothing blamed
    retry: list[str] = field(default_factory=list)  # case ids, run again isolated


def last_starts(
    prior: JournalContents, entries: list[RunlogEntry]
) -> list[RunlogEntry]:
    """Per worker, the last start that has no record."""
    last: dict[str, RunlogEntry] = {}
    for entry in entries:
        last[entry.worker] = entry
    out = []
    for entry in sorted(last.values(), key=lambda e: e.seq):
        case_id = case_id_for_node(entry.node_id)
        if case_id is None or case_id in prior.records:
            continue
        out.append(entry)
    return out


def adopt_stuck_attempt(prior: JournalContents, runlog: Path) -> dict[str, str]:
    """The case (node id -> worker) the previous attempt was running when
    ``torchcts-run`` killed it for not answering an interrupt
    (`interrupts.pending_interrupt`): in flight, as if that attempt had said so
    itself. Only an attempt running its cases in process goes unanswered (a
    controller of workers answers at once), so that is the runlog's latest start,
    when it has no record; an older session's unrecorded starts keep their own
    findings. It joins the journal's interrupted list in `prior`, so
    `inspect_previous` has it run again, blaming nothing unless it left evidence."""
    starts = last_starts(prior, read_runlog(runlog))
    latest = max(starts, key=lambda e: e.seq, default=None)
    stuck = {} if latest is None else {latest.node_id: latest.worker}
    if stuck:
        known = prior.diagnostics.get(INTERRUPTED) or []
        prior.diagnostics[INTERRUPTED] = sorted({*known, *stuck})
    return stuck


def inspect_previous(
    prior: JournalContents, runlog: Path, scratch: Path
) -> ResumeFindings:
    """Sort the previous attempt's unrecorded last starts (see the module docstring)."""
    findings = ResumeFindings()
    interrupted = set(prior.diagnostics.get(INTERRUPTED) or [])
    retried = set(prior.diagnostics.get(RETRIED) or [])
    for entry in last_starts(prior, read_runlog(runlog)):
        case_id = case_id_for_node(entry.node_id)
        assert case_id is not None
        crash, fault = read_evidence(scratch, entry.worker, entry.node_id, None)
        # evidence first: an interrupted list is the journal's latest, so it may be
        # an older session's, and a case it names may have died since, on its own
        if may_be_external(crash) and (
            entry.node_id in interrupted
            or orphaned_in(scratch, entry.worker) == entry.node_id
        ):
            findings.rerun.append(case_id)
            continue
        if may_be_external(crash) and case_id not in retried:
            findings.retry.append(case_id)
            continue
        detail = "the run ended while this case was running (last start in the runlog"
        detail += f" without a record); {crash.detail}"
        if case_id in retried and may_be_external(crash):
            detail += " (this was already its isolated retry)"
        crash = CrashInfo(crash.kind, crash.signal, crash.exit_code, detail)
        findings.crashed.append((case_id, crash, entry.worker, fault))
    return findings


__all__ = [
    "INTERRUPTED",
    "RESUME_KEYS",
    "RETRIED",
    "ResumeFindings",
    "adopt_stuck_attempt",
    "inspect_previous",
    "last_starts",
    "resume_differences",
]
