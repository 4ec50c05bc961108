"""Counting records by one attribute at a time, with every status as a column.

A per-dtype or per-capability table shows where a backend stands far better than one
total, and keeping all seven statuses in every row makes a row that only "passes"
because most of it was not run visible at a glance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from torchcts_schema import (
    SUITE_CAPABILITIES,
    VARIANT_CAPABILITIES,
    CaseRecord,
    NextFix,
    NotRunReason,
    Status,
    default_next_fix,
)

NONE_LABEL = "(none)"
# not_run reasons that come from the run's own selection (command-line filters, the
# semantic level, the sample limit), as opposed to what the backend declares
SELECTION_REASONS: frozenset[NotRunReason] = frozenset(
    {
        NotRunReason.FILTERED_BY_SELECTION,
        NotRunReason.LEVEL_FILTERED,
        NotRunReason.SAMPLE_LIMIT,
    }
)
STATUSES: tuple[Status, ...] = tuple(Status)


@dataclass(frozen=True)
class TallyRow:
    """One row of a count table: a label and its count per status."""

    label: str
    counts: tuple[int, ...]  # in `STATUSES` order

    @property
    def total(self) -> int:
        """Every record in the row."""
        return sum(self.counts)


def outside_selection(record: CaseRecord) -> bool:
    """A not_run case the run's own selection left out (not a backend declaration)."""
    return (
        record.status is Status.NOT_RUN and record.not_run_reason in SELECTION_REASONS
    )


def capability_of(record: CaseRecord) -> str:
    """The manifest capability a case needs.

    The runner may record it in ``extra["capability"]``; otherwise it follows from the
    case id: OpInfo variants are variant capabilities, hand-written suites are suite
    capabilities.
    """
    declared = record.extra.get("capability")
    if isinstance(declared, str) and declared:
        return declared
    if record.suite in SUITE_CAPABILITIES:
        return record.suite
    if record.variant in VARIANT_CAPABILITIES:
        return record.variant
    return record.variant or record.suite or NONE_LABEL


def next_fix_of(record: CaseRecord) -> NextFix | None:
    """The record's own next-fix category, or the default for its status."""
    return record.next_fix or default_next_fix(record.status)


def status_counts(records: Iterable[CaseRecord]) -> dict[Status, int]:
    """Count per status, all seven present."""
    counter = Counter(r.status for r in records)
    return {s: counter.get(s, 0) for s in STATUSES}


def tally(
    records: Iterable[CaseRecord],
    label_of: Callable[[CaseRecord], str],
    *,
    sort_key: Callable[[str], tuple[Any, ...]] | None = None,
) -> list[TallyRow]:
    """Rows of per-status counts grouped by `label_of`, sorted by label."""
    pairs = Counter((label_of(r), r.status) for r in records)
    labels = sorted({label for label, _ in pairs}, key=sort_key or _label_order)
    return [
        TallyRow(label, tuple(pairs.get((label, s), 0) for s in STATUSES))
        for label in labels
    ]


def level_label(record: CaseRecord) -> str:
    """Semantic level as a label."""
    return str(record.level)


def dtype_label(record: CaseRecord) -> str:
    """Dtype as a label; suites without a dtype get a fixed label."""
    return record.dtype or NONE_LABEL


def source_label(record: CaseRecord) -> str:
    """Expected-result source as a label."""
    return record.expected_source.value if record.expected_source else NONE_LABEL


def numeric_order(label: str) -> tuple[Any, ...]:
    """Sort numbers as numbers and anything else after them."""
    return (0, int(label), "") if label.isdigit() else (1, 0, label)


def _label_order(label: str) -> tuple[Any, ...]:
    # the placeholder sorts last so real values stay together
    return (label == NONE_LABEL, label)
