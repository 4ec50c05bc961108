"""Dtype discovery, step 2: a probe run's records, counted per op and dtype.

A probe (`discovery_probe`) runs forward and backward of every op in every dtype with
a few samples. Each (op, dtype) pair becomes one `Cell` holding the sample counts of
each variant by status, and one verdict: does the device *declare* the pair
unsupported (every executed sample raised an unsupported / not implemented error), or
does it have a kernel (that works, or that is wrong: a bug to report, never a dtype to
declare away)? No torch, no pytest: the records are plain data.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from torchcts_schema import DTYPE_NAMES, CaseRecord, NotRunReason, Status

OPINFO_SUITE = "opinfo"
PROBE_VARIANTS = ("forward", "backward")
EXECUTED = (
    Status.PASSED,
    Status.FAILED,
    Status.UNSUPPORTED,
    Status.ERROR,
    Status.CRASHED,
)
COUNT_LEGEND = "passed/failed/unsupported/error/crashed"
# records of cases the probe itself left out (its sample cap, its two variants, the
# command line's filters, the manifest's own OPS exclusions): no evidence either way
OUTSIDE_PROBE = frozenset(
    {
        NotRunReason.SAMPLE_LIMIT,
        NotRunReason.CAPABILITY_NOT_DECLARED,
        NotRunReason.FILTERED_BY_SELECTION,
        NotRunReason.LEVEL_FILTERED,
        NotRunReason.OP_EXCLUDED,
    }
)
# OpInfo names: anything else in a record (a crafted artifact) never reaches the text
# of a manifest, where it would be code
OP_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class Verdict(StrEnum):
    """What the samples of one (op, dtype) pair say about the device."""

    WORKS = "works"  # every executed sample passed
    UNSUPPORTED = "unsupported"  # every executed sample raised unsupported
    PARTIAL = "partial"  # some samples unsupported, others not (e.g. backward only)
    FAULTY = "faulty"  # a kernel runs, but some sample failed, erred or crashed
    UNTESTED = "untested"  # nothing executed (comparison not valid, known crash...)


DECLARED = frozenset({Verdict.UNSUPPORTED})
HAS_KERNEL = frozenset({Verdict.WORKS, Verdict.PARTIAL, Verdict.FAULTY})


@dataclass(frozen=True)
class Cell:
    """Sample counts of one op in one dtype, per variant and status ("not_run" and
    "skipped" counted too)."""

    op: str
    dtype: str
    counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def total(self, status: str) -> int:
        """Samples of every variant with `status`."""
        return sum(per.get(status, 0) for per in self.counts.values())

    @property
    def executed(self) -> int:
        """Samples that ran to an ending (any status but not_run and skipped)."""
        return sum(self.total(s) for s in EXECUTED)

    @property
    def verdict(self) -> Verdict:
        """See `Verdict`; unsupported only when *every* executed sample says so."""
        executed, unsupported = self.executed, self.total(Status.UNSUPPORTED)
        if executed == 0:
            return Verdict.UNTESTED
        if unsupported == executed:
            return Verdict.UNSUPPORTED
        if unsupported:
            return Verdict.PARTIAL
        if self.total(Status.PASSED) == executed:
            return Verdict.WORKS
        return Verdict.FAULTY

    def counts_text(self) -> str:
        """``forward 0/0/2/0/0, backward 0/0/2/0/0`` (`COUNT_LEGEND`), plus samples
        not run."""
        parts = []
        for variant in sorted(self.counts, key=_variant_order):
            per = self.counts[variant]
            text = f"{variant} " + "/".join(str(per.get(s, 0)) for s in EXECUTED)
            left = per.get(Status.NOT_RUN, 0) + per.get(Status.SKIPPED, 0)
            parts.append(text + (f" (+{left} not run)" if left else ""))
        return ", ".join(parts)

    def totals(self) -> dict[str, int]:
        """Every status's count over the variants (JSON)."""
        return {s.value: self.total(s) for s in Status if self.total(s)}


def _variant_order(variant: str) -> int:
    return PROBE_VARIANTS.index(variant) if variant in PROBE_VARIANTS else 99


class EvidenceError(ValueError):
    """A record that a probe cannot have written (one line, naming the case)."""


def collect_cells(
    records: Iterable[CaseRecord], known_ops: Mapping[str, str]
) -> dict[tuple[str, str], Cell]:
    """(op, dtype) -> `Cell` from a probe's records.

    `known_ops` maps every OpInfo op segment of this torch to its OpInfo name; an op
    outside it raises `EvidenceError` (a probe of another torch, or a crafted file).
    """
    tallies: dict[tuple[str, str], dict[str, Counter[str]]] = {}
    for record in records:
        if record.suite != OPINFO_SUITE or record.variant not in PROBE_VARIANTS:
            continue
        if record.not_run_reason in OUTSIDE_PROBE:
            continue
        if record.dtype not in DTYPE_NAMES:
            raise EvidenceError(
                f"case {record.case_id!r}: dtype {record.dtype!r} is not a dtype name"
            )
        if not OP_NAME.fullmatch(record.op) or record.op not in known_ops:
            raise EvidenceError(
                f"case {record.case_id!r}: op {record.op!r} is not an OpInfo op of "
                "this torch (was the probe run with another torch?)"
            )
        per = tallies.setdefault((record.op, record.dtype), {})
        per.setdefault(record.variant, Counter())[record.status.value] += 1
    return {
        key: Cell(key[0], key[1], {v: dict(c) for v, c in sorted(per.items())})
        for key, per in sorted(tallies.items())
    }


__all__ = [
    "COUNT_LEGEND",
    "DECLARED",
    "HAS_KERNEL",
    "PROBE_VARIANTS",
    "Cell",
    "EvidenceError",
    "Verdict",
    "collect_cells",
]
