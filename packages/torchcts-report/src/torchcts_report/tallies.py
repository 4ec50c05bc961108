"""What the count tables count by: labels, their order, rows with every status a column.

A per-dtype or per-capability table shows where a backend stands far better than one
total, and keeping all seven statuses in every row makes a row that only "passes"
because most of it was not run visible at a glance. The counting itself is one pass
over the records (`torchcts_report.summary`).
"""

from __future__ import annotations

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


def capability_of(record: CaseRecord) -> str:
    """The manifest capability a case needs.

    The runner may record it in ``extra["capability"]``; otherwise it follows from the
    case id: OpInfo variants are variant capabilities, hand-written suites are suite
    capabilities.
    """
    return capability_for(record.suite, record.variant, record.extra.get("capability"))


def capability_for(suite: str, variant: str, declared: object = None) -> str:
    """`capability_of` from the fields it reads (a declared one wins when it is a name)."""
    if isinstance(declared, str) and declared:
        return declared
    if suite in SUITE_CAPABILITIES:
        return suite
    if variant in VARIANT_CAPABILITIES:
        return variant
    return variant or suite or NONE_LABEL


def next_fix_of(record: CaseRecord) -> NextFix | None:
    """The record's own next-fix category, or the default for its status."""
    return record.next_fix or default_next_fix(record.status)


def numeric_order(label: str) -> tuple[Any, ...]:
    """Sort numbers as numbers and anything else after them."""
    return (0, int(label), "") if label.isdigit() else (1, 0, label)


def label_order(label: str) -> tuple[Any, ...]:
    """Labels in name order, the placeholder last so real values stay together."""
    return (label == NONE_LABEL, label)
