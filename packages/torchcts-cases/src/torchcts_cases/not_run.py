"""The records of cases TorchCTS chose not to run, one at a time or a group in bulk.

Most of a full matrix is not run (about 325,000 cases at level 1 of a manifest that
declares every dtype), so selection makes those records without a `CaseSpec` each and
with positional calls, which cost a third less than keyword ones.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

from torchcts_schema import (
    CaseRecord,
    ExpectedSource,
    NextFix,
    NotRunReason,
    Status,
    default_next_fix,
)

from torchcts_cases.spec import CaseSpec

Reason = tuple[NotRunReason, str]
NEXT_FIX: NextFix | None = default_next_fix(Status.NOT_RUN)

_FIELDS = fields(CaseRecord)
_NAMES = [f.name for f in _FIELDS]
_CASE, _NODE, _SAMPLE, _LEVEL, _REASON, _DETAIL = (
    _NAMES.index(n)
    for n in ("case_id", "node_id", "sample", "level", "not_run_reason", "detail")
)
if any(f.default_factory is not MISSING for f in _FIELDS[: _DETAIL + 1]):
    raise TypeError("CaseRecord: a field before 'detail' has a default factory")
_DEFAULTS: list[Any] = [
    None if f.default is MISSING else f.default for f in _FIELDS[: _DETAIL + 1]
]


def not_run_record(spec: CaseSpec, reason: NotRunReason, detail: str) -> CaseRecord:
    """The record of a case TorchCTS chose not to run."""
    return CaseRecord(
        case_id=spec.case_id,
        node_id="torchcts::" + spec.case_id,
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
    """`not_run_record` for the samples of one OpInfo group, from its shared fields.

    The argument positions come from the dataclass fields, so they follow the schema.
    """

    def __init__(
        self,
        suite: str,
        op: str,
        variant: str,
        dtype: str | None,
        source: ExpectedSource,
    ) -> None:
        shared = {
            "suite": suite,
            "op": op,
            "variant": variant,
            "dtype": dtype,
            "expected_source": source,
            "status": Status.NOT_RUN,
            "next_fix": NEXT_FIX,
        }
        self.template = list(_DEFAULTS)
        for name, value in shared.items():
            self.template[_NAMES.index(name)] = value

    def record(
        self, case_id: str, sample: int, level: int, reason: Reason
    ) -> CaseRecord:
        """The record of one sample of the group."""
        args = self.template.copy()
        args[_CASE] = case_id
        args[_NODE] = "torchcts::" + case_id
        args[_SAMPLE] = sample
        args[_LEVEL] = level
        args[_REASON], args[_DETAIL] = reason
        return CaseRecord(*args)
