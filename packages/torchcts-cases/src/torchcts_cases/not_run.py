"""The records of cases TorchCTS chose not to run, one at a time or a group in bulk.

Most of a full matrix is not run (about 325,000 cases at level 1 of a manifest that
declares every dtype), so selection makes those records from the fields a group
shares, without a `CaseSpec` per case.
"""

from __future__ import annotations

import functools

from torchcts_schema import (
    CaseRecord,
    ExpectedSource,
    NextFix,
    NotRunReason,
    Status,
    default_next_fix,
    node_id_for_case,
)

from torchcts_cases.spec import CaseSpec

Reason = tuple[NotRunReason, str]
NEXT_FIX: NextFix | None = default_next_fix(Status.NOT_RUN)


def not_run_record(spec: CaseSpec, reason: NotRunReason, detail: str) -> CaseRecord:
    """The record of a case TorchCTS chose not to run."""
    return CaseRecord(
        case_id=spec.case_id,
        node_id=node_id_for_case(spec.case_id),
        op=spec.op,
        variant=spec.variant,
        dtype=spec.dtype,
        sample=spec.sample,
        level=spec.level,
        status=Status.NOT_RUN,
        expected_source=spec.expected_source,
        suite=spec.suite,
        next_fix=NEXT_FIX,
        not_run_reason=reason,
        detail=detail,
    )


class GroupRecords:
    """`not_run_record` for the samples of one OpInfo group, from its shared fields."""

    def __init__(
        self,
        suite: str,
        op: str,
        variant: str,
        dtype: str | None,
        source: ExpectedSource,
    ) -> None:
        self._make = functools.partial(
            CaseRecord,
            suite=suite,
            op=op,
            variant=variant,
            dtype=dtype,
            expected_source=source,
            status=Status.NOT_RUN,
            next_fix=NEXT_FIX,
        )

    def record(
        self, case_id: str, sample: int, level: int, reason: Reason
    ) -> CaseRecord:
        """The record of one sample of the group."""
        return self._make(
            case_id=case_id,
            node_id=node_id_for_case(case_id),
            sample=sample,
            level=level,
            not_run_reason=reason[0],
            detail=reason[1],
        )
