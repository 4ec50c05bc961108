"""A run's non-passed cases, grouped the way upstream skip lists key them.

Backend teams keep skip lists keyed by op, variant and dtype (PyTorch's OpInfo
decorators, torch-xpu-ops' ``skip_dict``). `collect_entries` turns one run into one
`SkipEntry` per suite, op, variant, dtype and status, with how many cases of that key
ran, the first case's own reason and every case id, so every export format renders the
same facts and none decides them twice.

Exported: every executed case that did not pass (failed, error, unsupported, crashed).
Not exported: skipped cases (pytest skipped them for a runtime condition: no verdict)
and, by default, not_run cases (the manifest already declines them, so an upstream
suite driven by the same manifest never runs them). `include_not_run` adds the not_run
cases whose reason is the backend's own declaration (`BACKEND_NOT_RUN`), for an
upstream suite that runs every dtype and variant regardless; the run's own selection
(filters, level, sample limit), an unbuildable CPU reference and PyTorch's own
"comparison not valid" say nothing about the backend and are never exported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from torchcts_schema import CaseRecord, NotRunReason, RunArtifact, Status

from torchcts_report.clusters import example_message
from torchcts_report.text import one_line

# the order entries of one key are listed in: what an upstream list must skip first
EXPORTED: tuple[Status, ...] = (
    Status.CRASHED,
    Status.UNSUPPORTED,
    Status.ERROR,
    Status.FAILED,
    Status.NOT_RUN,
)
# statuses that reached a verdict on the backend: the "of N run" in every entry
JUDGED = frozenset(
    {Status.PASSED, Status.FAILED, Status.ERROR, Status.UNSUPPORTED, Status.CRASHED}
)
BACKEND_NOT_RUN = frozenset(
    {
        NotRunReason.DTYPE_NOT_SUPPORTED,
        NotRunReason.CAPABILITY_NOT_DECLARED,
        NotRunReason.OP_EXCLUDED,
        NotRunReason.KNOWN_CRASH_NOT_EXECUTED,
        NotRunReason.DEVICE_COUNT,
    }
)
REASON_LIMIT = 200

Key = tuple[str, str, str, str | None]  # suite, op, variant, dtype


@dataclass(frozen=True)
class SkipEntry:
    """The cases of one suite, op, variant and dtype that ended in one status."""

    suite: str
    op: str
    variant: str
    dtype: str | None
    status: Status
    count: int
    run: int  # cases of this suite, op, variant and dtype that reached a verdict
    reason: str  # the first case's own reason: one line, cleaned, bounded
    case_ids: tuple[str, ...]  # sorted

    def summary(self) -> str:
        """``2 of 3 run failed: <reason>`` (``4 not run: <reason>``): the line each
        format shows for it."""
        if self.status is Status.NOT_RUN:
            return f"{self.count} not run: {self.reason}"
        return f"{self.count} of {self.run} run {self.status.value}: {self.reason}"


def collect_entries(
    artifact: RunArtifact, *, include_not_run: bool = False
) -> list[SkipEntry]:
    """Every exported entry of `artifact`, sorted by key, then by `EXPORTED` order."""
    run: dict[Key, int] = {}
    pools: dict[tuple[Key, Status], list[CaseRecord]] = {}
    for record in artifact.results:
        key = _key(record)
        if record.status in JUDGED:
            run[key] = run.get(key, 0) + 1
        if record.status in EXPORTED:
            pools.setdefault((key, record.status), []).append(record)
    if include_not_run:
        for record in _declined(artifact.not_run):
            pools.setdefault((_key(record), Status.NOT_RUN), []).append(record)
    entries = [
        _entry(key, status, records, run.get(key, 0))
        for (key, status), records in pools.items()
    ]
    entries.sort(key=_order)
    return entries


def entries_json(entries: list[SkipEntry]) -> str:
    """The plain JSON list, one object per entry, in the entries' order."""
    rows: list[dict[str, Any]] = [
        {
            "suite": e.suite,
            "op": e.op,
            "variant": e.variant,
            "dtype": e.dtype,
            "status": e.status.value,
            "count": e.count,
            "run": e.run,
            "reason": e.reason,
            "case_ids": list(e.case_ids),
        }
        for e in entries
    ]
    # ASCII escapes keep any string from the artifact (surrogates too) a valid,
    # byte-stable document
    return json.dumps(rows, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


def _declined(records: Iterable[CaseRecord]) -> Iterable[CaseRecord]:
    return (r for r in records if r.not_run_reason in BACKEND_NOT_RUN)


def _key(record: CaseRecord) -> Key:
    return (record.suite, record.op, record.variant, record.dtype)


def _entry(key: Key, status: Status, records: list[CaseRecord], run: int) -> SkipEntry:
    records.sort(key=lambda r: r.case_id)
    suite, op, variant, dtype = key
    return SkipEntry(
        suite=suite,
        op=op,
        variant=variant,
        dtype=dtype,
        status=status,
        count=len(records),
        run=run,
        reason=reason_of(records[0]),
        case_ids=tuple(r.case_id for r in records),
    )


def reason_of(record: CaseRecord) -> str:
    """Why this case did not pass, as recorded: one cleaned, bounded line."""
    if record.status is Status.NOT_RUN:
        reason = record.not_run_reason
        head = reason.value if reason else "no reason recorded"
        detail = f" ({record.detail})" if record.detail else ""
        return one_line(head + detail, REASON_LIMIT)
    message = example_message(record)
    if record.status is Status.CRASHED:  # the status already says it
        message = message.removeprefix("crashed: ")
    return one_line(message, REASON_LIMIT)


def _order(entry: SkipEntry) -> tuple[str, str, str, bool, str, int]:
    return (
        entry.suite,
        entry.op,
        entry.variant,
        entry.dtype is None,
        entry.dtype or "",
        EXPORTED.index(entry.status),
    )


__all__ = [
    "BACKEND_NOT_RUN",
    "EXPORTED",
    "SkipEntry",
    "collect_entries",
    "entries_json",
    "reason_of",
]
