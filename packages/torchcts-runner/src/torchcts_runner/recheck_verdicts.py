"""Judge each entry a recheck of the exclusions exercised: remove, narrow, or keep it.

A case speaks for an entry only through its declines (`Decline`); it passed only with
status ``passed`` (no record, a skip, an unsupported path are not passes). The rules,
in order:

1. Removing a set R of entries would run exactly the cases all of whose declines are
   in R. Start from every entry; while some case that did not pass has all its
   declines in R, the entry of those declines with the most cases that did not pass
   stays in the manifest (leaves R; ties go to the entry that sorts first). Every
   case that removing the rest of R would run then passed.
2. Each entry gets one verdict:
   - ``keep`` (still needed): it left R; the evidence is its cases that did not pass.
   - ``unproven``: in R, but every case of it is also declined by an entry that
     stays, so removing it runs nothing here.
   - ``confirm``: in R and what it would run passed, but a filter of the selection
     left out cases it declines: the evidence covers part of it.
   - ``narrow``: a DTYPES False entry only the op filter narrowed: the dtype can be
     declared for the ops whose cases passed (a regex), not for every op.
   - ``remove``: in R, what it would run passed, and the selection covered it whole.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from torchcts_schema import CaseRecord, Decline, DeclinedOutside, Status

VERDICTS = ("remove", "narrow", "confirm", "keep", "unproven")
MISSING = "no record"  # a planned case the run never recorded


@dataclass
class EntryVerdict:
    """One entry's verdict and the evidence for it."""

    decline: Decline
    verdict: str
    cases: list[str]  # every case it declines that the recheck planned, in order
    would_run: list[str]  # the cases removing it (with the rest of R) would run
    statuses: Counter[str] = field(default_factory=Counter)  # over `cases`
    not_passed: list[str] = field(default_factory=list)  # over `cases`
    stays_with: tuple[Decline, ...] = ()  # unproven: the entries that keep its cases
    outside: dict[str, int] = field(default_factory=dict)  # filter -> cases left out
    ops: tuple[str, ...] = ()  # the ops of `would_run`, sorted


def status_of(record: CaseRecord | None) -> str:
    """A case's status word, `MISSING` without a record."""
    return MISSING if record is None else record.status.value


def judge_entries(
    declined: Mapping[str, tuple[Decline, ...]],
    records: Mapping[str, CaseRecord],
    outside: DeclinedOutside,
) -> list[EntryVerdict]:
    """Every entry that declines a planned case, judged by the rules above, sorted."""
    passed = {
        case_id
        for case_id in declined
        if (r := records.get(case_id)) is not None and r.status is Status.PASSED
    }
    by_entry: dict[Decline, list[str]] = {}
    for case_id, declines in declined.items():
        for decline in declines:
            by_entry.setdefault(decline, []).append(case_id)
    failures = {d: sum(c not in passed for c in ids) for d, ids in by_entry.items()}
    removable = set(by_entry)
    while True:
        blocking = [
            declines
            for case_id, declines in declined.items()
            if case_id not in passed and set(declines) <= removable
        ]
        if not blocking:
            break
        stays = min(blocking[0], key=lambda d: (-failures[d], d))
        removable.discard(stays)
    return [
        _verdict(d, ids, declined, records, passed, removable, outside)
        for d, ids in sorted(by_entry.items())
    ]


def _verdict(
    decline: Decline,
    cases: list[str],
    declined: Mapping[str, tuple[Decline, ...]],
    records: Mapping[str, CaseRecord],
    passed: set[str],
    removable: set[Decline],
    outside: DeclinedOutside,
) -> EntryVerdict:
    statuses = Counter(status_of(records.get(c)) for c in cases)
    not_passed = [c for c in cases if c not in passed]
    would_run = (
        [c for c in cases if set(declined[c]) <= removable]
        if decline in removable
        else []
    )
    left_out = {f: n for (d, f), n in outside.items() if d == decline}
    out = EntryVerdict(
        decline,
        "keep",
        cases,
        would_run,
        statuses,
        not_passed,
        outside=dict(sorted(left_out.items())),
        ops=tuple(sorted({records[c].op for c in would_run if c in records})),
    )
    if decline not in removable:
        return out
    if not would_run:
        out.verdict = "unproven"
        out.stays_with = tuple(
            sorted({d for c in cases for d in declined[c] if d not in removable})
        )
    elif not left_out:
        out.verdict = "remove"
    elif decline.kind == "dtype" and set(left_out) == {"op"}:
        out.verdict = "narrow"
    else:
        out.verdict = "confirm"
    return out


__all__ = ["MISSING", "VERDICTS", "EntryVerdict", "judge_entries", "status_of"]
