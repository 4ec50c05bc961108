"""Grouping a run's records once, for every count the report's sections need.

A level-1 run records a few hundred executed cases and ~325,000 not_run cases, and a
not_run case only ever adds to counts: status, source, capability, dtype, level,
reason, the op by dtype grid, the next-fix category. So the records are grouped once,
in C (`operator.attrgetter` into a `Counter`), by every attribute a count depends on;
the sections then read a few hundred groups (the grid a few thousand cells) instead
of the records, and only the records a section shows one by one are kept as records. Every number stays computed
from every record: the groups lose nothing a count needs. Group keys compare by value,
so the records must have passed `check_artifact` (which refuses a level of True, for
example, that would otherwise count as level 1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import Any, NamedTuple

from torchcts_schema import (
    CaseRecord,
    ExpectedSource,
    NextFix,
    NotRunReason,
    Status,
    default_next_fix,
)

from torchcts_report.tallies import (
    NONE_LABEL,
    SELECTION_REASONS,
    STATUSES,
    TallyRow,
    capability_for,
    capability_of,
    label_order,
)

# the attributes a count depends on, in `Group` order (capability is derived)
_GROUP_KEY = attrgetter(
    "status",
    "expected_source",
    "suite",
    "variant",
    "dtype",
    "level",
    "not_run_reason",
    "next_fix",
)
# the grid's: a second, narrower pass keeps both tables small (a few hundred groups,
# a few thousand cells) where one joint key would have tens of thousands of entries
_CELL_KEY = attrgetter("op", "dtype", "status", "not_run_reason")
_EXTRA = attrgetter("extra")
_CASE_ID = attrgetter("case_id")
_STATUS = attrgetter("status")
_REASON = attrgetter("not_run_reason")
_TRIAGE_KEY = attrgetter("status", "not_run_reason", "next_fix")
_EXECUTED = frozenset(Status) - {Status.NOT_RUN}


class Group(NamedTuple):
    """Records alike in every attribute a count of the scorecard depends on."""

    status: Status
    source: ExpectedSource | None
    suite: str
    variant: str
    dtype: str | None
    level: int
    reason: NotRunReason | None
    next_fix: NextFix | None
    capability: str

    @property
    def category(self) -> NextFix | None:
        """The next-fix category of the group's records (see `next_fix_of`)."""
        return self.next_fix or default_next_fix(self.status)

    @property
    def counted(self) -> bool:
        """Support-surface cases with a reason: triage only counts them per reason."""
        return self.reason is not None and self.category is NextFix.SUPPORT_SURFACE


class Cell(NamedTuple):
    """Records of one op, dtype and status, for the grid.

    `outside_selection`: not_run cases the run's own selection (command-line filters,
    level, sample limit) left out, as opposed to what the backend declares.
    """

    op: str
    dtype: str | None
    status: Status
    outside_selection: bool


@dataclass(frozen=True)
class RecordSummary:
    """The grouped counts of one run, plus the records shown one by one.

    `singles` are the records next-fix triage reads one by one (those with a category,
    but not in a `counted` group) and `executed` those whose status is not not_run,
    both in record order.
    """

    groups: dict[Group, int]
    cells: dict[Cell, int]
    singles: list[CaseRecord]
    executed: list[CaseRecord]
    total: int
    records: list[CaseRecord] = field(repr=False)
    case_ids: list[str] = field(repr=False)  # in record order
    _first_ids: dict[NotRunReason, str] = field(default_factory=dict, repr=False)
    _reasons: list[NotRunReason | None] = field(default_factory=list, repr=False)

    def first_case_id(self, reason: NotRunReason) -> str:
        """The smallest case id among the `counted` records with `reason`.

        Looked up (in C) only for the reasons the next-fix actions show as examples;
        the reason column is read once and then scanned as a list of pointers.
        """
        known = self._first_ids.get(reason)
        if known is None:
            if all(g.counted for g in self.groups if g.reason is reason):
                if not self._reasons:
                    self._reasons.extend(map(_REASON, self.records))
                chosen = map(is_, self._reasons, repeat(reason))
            else:
                keys = {
                    (g.status, g.reason, g.next_fix)
                    for g in self.groups
                    if g.counted and g.reason is reason
                }
                chosen = map(keys.__contains__, map(_TRIAGE_KEY, self.records))
            known = min(compress(self.case_ids, chosen))
            self._first_ids[reason] = known
        return known


def summarise(records: list[CaseRecord]) -> RecordSummary:
    """Group `records` once; every report section reads its counts from the result."""
    coarse: Counter[tuple[Any, ...]] = Counter(map(_GROUP_KEY, records))
    cells: Counter[Cell] = Counter()
    for (op, dtype, status, reason), count in Counter(map(_CELL_KEY, records)).items():
        outside = status is Status.NOT_RUN and reason in SELECTION_REASONS
        cells[Cell(op, dtype, status, outside)] += count
    # a record may declare its capability in `extra`; all others take it from the
    # suite and variant, so it is derived once per group
    declared = Counter(
        (_GROUP_KEY(r), capability_of(r)) for r in filter(_EXTRA, records)
    )
    for (key, capability), count in declared.items():
        coarse[key] -= count
        coarse[(*key, capability)] += count
    groups: dict[Group, int] = {}
    for key, count in coarse.items():
        if count:
            if len(key) < len(Group._fields):
                key = (*key, capability_for(key[2], key[3]))
            group = Group._make(key)
            groups[group] = groups.get(group, 0) + count
    singled = {
        (g.status, g.reason, g.next_fix)
        for g in groups
        if not g.counted and g.category is not None  # passed cases need no action
    }
    executed = list(
        compress(records, map(_EXECUTED.__contains__, map(_STATUS, records)))
    )
    # usually every not_run group is counted, so the singles are executed cases
    scope = executed if all(key[0] in _EXECUTED for key in singled) else records
    singles = list(compress(scope, map(singled.__contains__, map(_TRIAGE_KEY, scope))))
    case_ids = list(map(_CASE_ID, records))
    return RecordSummary(
        groups,
        dict(cells),
        singles,
        executed,
        len(records),
        records,
        case_ids,
    )


def status_totals(summary: RecordSummary) -> dict[Status, int]:
    """Count per status, all seven present."""
    counts = dict.fromkeys(STATUSES, 0)
    for group, count in summary.groups.items():
        counts[group.status] += count
    return counts


def group_tally(
    summary: RecordSummary,
    label_of: Callable[[Group], str],
    *,
    sort_key: Callable[[str], tuple[Any, ...]] | None = None,
) -> list[TallyRow]:
    """Rows of per-status counts grouped by `label_of`, sorted by label."""
    pairs: Counter[tuple[str, Status]] = Counter()
    for group, count in summary.groups.items():
        pairs[label_of(group), group.status] += count
    labels = sorted({label for label, _ in pairs}, key=sort_key or label_order)
    return [
        TallyRow(label, tuple(pairs.get((label, s), 0) for s in STATUSES))
        for label in labels
    ]


def source_of(group: Group) -> str:
    """Expected-result source as a label."""
    return group.source.value if group.source else NONE_LABEL


def capability_label(group: Group) -> str:
    """The manifest capability the group's cases need."""
    return group.capability


def dtype_of(group: Group) -> str:
    """Dtype as a label; suites without a dtype get a fixed label."""
    return group.dtype or NONE_LABEL


def level_of(group: Group) -> str:
    """Semantic level as a label."""
    return str(group.level)


def not_run_reasons(summary: RecordSummary) -> dict[str, int]:
    """How many not_run cases each reason has (``(none)`` for a missing one)."""
    counts: Counter[str] = Counter()
    for group, count in summary.groups.items():
        if group.status is Status.NOT_RUN:
            counts[group.reason.value if group.reason else NONE_LABEL] += count
    return dict(counts)
