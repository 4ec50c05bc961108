"""The soak's verdict: one resumed result compared case for case with a reference.

Pure (no pytest, no torch, no processes), so `tests/test_soak_compare.py` pins it. The
soak (`soak.py`) turns each run's records into `Outcome`s and hands this module the two
maps and the cycle's raw journal lines. The four counts are disjoint, and each case id
lands in at most one of lost, invented and changed:

1. lost: a reference case with no record in the final result.
2. invented: a final case the reference does not have, or a case that is crashed in the
   final result but not in the reference (a crash made up by the interruption or the
   resume).
3. changed: any other difference: another status, or the same status with another
   detail (the crash kind of a crashed case, the reason of a not_run case).
4. duplicated: per case id, every ``case`` line of the journal past the first that
   records an executed status (not not_run). A case re-run after an interrupt appears
   once when its first attempt left no record; a second record is a duplicate.
   ``case_block`` lines hold selection accounting (not_run) only and are not counted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

CRASHED = "crashed"
NOT_RUN = "not_run"
EXAMPLES = 3  # case ids kept per count, for the cycle line and for inspection


class Outcome(NamedTuple):
    """What a record says happened: its status and the detail that tells kinds apart."""

    status: str
    detail: str | None = None  # crash kind for crashed, reason for not_run


def outcome_of(
    status: str, crash_kind: str | None = None, not_run_reason: str | None = None
) -> Outcome:
    """The outcome of a record: the crash kind matters when crashed, the reason when
    not_run, and nothing else does (messages, durations and workers vary by run)."""
    if status == CRASHED:
        return Outcome(status, crash_kind)
    if status == NOT_RUN:
        return Outcome(status, not_run_reason)
    return Outcome(status)


@dataclass
class Comparison:
    """The counts of one cycle, with a few example case ids for each."""

    records: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    invented: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def add(self, name: str, case_id: str, times: int = 1) -> None:
        """Count `case_id` under `name` (`times` times), keeping the first examples."""
        self.counts[name] += times
        examples: list[str] = getattr(self, name)
        if len(examples) < EXAMPLES:
            examples.append(case_id)

    @property
    def clean(self) -> bool:
        """True when nothing was lost, duplicated, invented or changed."""
        return not any(self.counts.values())


def duplicated_records(journal_lines: Iterable[str]) -> dict[str, int]:
    """Case id -> executed ``case`` lines past the first (only ids with extras).

    A line that is not JSON (the half-written tail a kill leaves) is not a record.
    """
    executed: Counter[str] = Counter()
    for text in journal_lines:
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            continue
        if not isinstance(line, dict) or line.get("type") != "case":
            continue
        record = line.get("record") or {}
        if record.get("status") != NOT_RUN and "case_id" in record:
            executed[record["case_id"]] += 1
    return {case_id: n - 1 for case_id, n in sorted(executed.items()) if n > 1}


def compare(
    reference: Mapping[str, Outcome],
    final: Mapping[str, Outcome],
    journal_lines: Iterable[str],
) -> Comparison:
    """Compare a final result with the reference (see the module docstring)."""
    result = Comparison(records=len(reference.keys() | final.keys()))
    for case_id in sorted(reference.keys() | final.keys()):
        want, got = reference.get(case_id), final.get(case_id)
        if got is None:
            result.add("lost", case_id)
        elif want is None or (got.status == CRASHED and want.status != CRASHED):
            result.add("invented", case_id)
        elif got != want:
            result.add("changed", case_id)
    for case_id, extra in duplicated_records(journal_lines).items():
        result.add("duplicated", case_id, extra)
    return result


__all__ = [
    "Comparison",
    "Outcome",
    "compare",
    "duplicated_records",
    "outcome_of",
]
