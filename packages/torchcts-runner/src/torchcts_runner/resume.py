"""--resume: what an interrupted run left behind, and which case it died in.

The journal says which cases finished. The runlog says which case each worker started
last; a last start without a record is a case the process died in, so it becomes
``crashed`` (with the signal, timeout or exit evidence the scratch files hold) and is
not run again. Cases that were only in flight when a user interrupted the run (the
journal's ``interrupted_in_flight`` diagnostic) are run again instead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from torchcts_schema import (
    CaseRecord,
    CrashInfo,
    CrashKind,
    JournalContents,
    case_id_for_node,
)

from torchcts_runner.crashes import read_evidence
from torchcts_runner.runlog import RunlogEntry, read_runlog

INTERRUPTED = "interrupted_in_flight"


def died_in(prior: JournalContents, entries: list[RunlogEntry]) -> list[RunlogEntry]:
    """Per worker, the last start that has no record and was not a user interrupt."""
    interrupted = prior.diagnostics.get(INTERRUPTED) or []
    last: dict[str, RunlogEntry] = {}
    for entry in entries:
        last[entry.worker] = entry
    out = []
    for entry in sorted(last.values(), key=lambda e: e.seq):
        case_id = case_id_for_node(entry.node_id)
        if case_id is None or case_id in prior.records:
            continue
        if entry.node_id in interrupted:
            continue
        out.append(entry)
    return out


def crashed_from_runlog(
    prior: JournalContents,
    runlog: Path,
    scratch: Path,
    make_record: Callable[[str, CrashInfo, str, str], CaseRecord],
) -> list[CaseRecord]:
    """Crashed records for the cases the previous process died in.

    `make_record(case_id, crash, worker, fault_text)` builds the record (the plugin
    knows the case's spec and the crash-record writer).
    """
    records = []
    for entry in died_in(prior, read_runlog(runlog)):
        case_id = case_id_for_node(entry.node_id)
        assert case_id is not None
        crash, fault = read_evidence(scratch, entry.worker, entry.node_id, None)
        detail = "the run ended while this case was running (last start in the runlog"
        detail += f" without a record); {crash.detail}"
        kind = crash.kind
        if kind is CrashKind.WORKER_LOST:  # the process itself is gone: no evidence
            kind = CrashKind.SUBPROCESS
        crash = CrashInfo(kind, crash.signal, crash.exit_code, detail)
        records.append(make_record(case_id, crash, entry.worker, fault))
    return records


__all__ = ["INTERRUPTED", "crashed_from_runlog", "died_in"]
