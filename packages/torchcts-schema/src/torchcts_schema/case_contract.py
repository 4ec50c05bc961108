"""The case contract, declared once: what a case source hands the runner.

A case source (``torchcts_cases``, or any module named through the
``torchcts.case_sources`` entry-point group) describes each case with a `CaseSpec`,
answers a `Selection` with `SelectedCases`, and judges a result with a `Verdict`.
`record_for` is the one way to build a `CaseRecord` from a spec, so the fields a
spec determines are copied in exactly one place. No torch here: the runner, its
test doubles and every reviewer tool share these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchcts_schema.identity import node_id_for_case, split_case_id
from torchcts_schema.records import CaseRecord, ToleranceUsed
from torchcts_schema.vocabulary import ExpectedSource, NotRunReason

# Reasons that say a case lies outside what the command line asked for (its level or
# filters). A subset run counts those cases instead of recording each: a rerun of one
# case costs what one case costs, not what the universe costs.
OUTSIDE_REASONS = frozenset(
    {NotRunReason.LEVEL_FILTERED, NotRunReason.FILTERED_BY_SELECTION}
)
# (suite, op, dtype, reason) -> how many cases were counted, not recorded
OutsideCounts = dict[tuple[str, str, str | None, str], int]


def count_outside(
    counts: OutsideCounts,
    suite: str,
    op: str,
    dtype: str | None,
    reason: str,
    n: int = 1,
) -> None:
    """Add `n` cases of one (suite, op, dtype) group to `counts` under `reason`."""
    key = (suite, op, dtype, str(reason))
    counts[key] = counts.get(key, 0) + n


CASE_SOURCE_GROUP = "torchcts.case_sources"  # entry points: name -> module

# The kinds of manifest entry that decline a case, and what `Decline.item` names:
# "dtype" DTYPES[item] is False or absent; "dtype_regex" DTYPES[item] is a regex that
# does not match `op`; "ops_exclude" OPS.exclude[item] (a glob) matches; "ops_include"
# OPS.include names no glob matching `op`; "capability" item is not in CAPABILITIES;
# "known_crash" the known-crash rule with id `item` covers the case.
DECLINE_KINDS = (
    "dtype",
    "dtype_regex",
    "ops_exclude",
    "ops_include",
    "capability",
    "known_crash",
)


@dataclass(frozen=True, slots=True, order=True)
class Decline:
    """One manifest entry (or known-crash rule) that keeps a case from a normal run.

    A recheck of the exclusions runs the declined cases and judges each entry by the
    cases it declines, so the entry is named exactly: its kind, its key, and for the
    per-op kinds the op it leaves out.
    """

    kind: str
    item: str
    op: str = ""


# (decline, filter) -> cases of that entry a filter of the selection ("op", "dtype",
# "suite") left out of a recheck: the entry's evidence does not cover them
DeclinedOutside = dict[tuple[Decline, str], int]


@dataclass(frozen=True)
class CaseSpec:
    """One case: its stable id, what it exercises and what it is compared against."""

    case_id: str
    suite: str
    op: str
    variant: str
    dtype: str | None
    sample: int | None
    level: int
    expected_source: ExpectedSource
    capability: str
    surfaces: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "case_id": self.case_id,
            "suite": self.suite,
            "op": self.op,
            "variant": self.variant,
            "dtype": self.dtype,
            "sample": self.sample,
            "level": self.level,
            "expected_source": self.expected_source.value,
            "capability": self.capability,
            "surfaces": list(self.surfaces),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseSpec:
        """Inverse of `to_dict`."""
        return cls(
            case_id=data["case_id"],
            suite=data["suite"],
            op=data["op"],
            variant=data["variant"],
            dtype=data.get("dtype"),
            sample=data.get("sample"),
            level=int(data["level"]),
            expected_source=ExpectedSource(data["expected_source"]),
            capability=data["capability"],
            surfaces=tuple(data.get("surfaces", ())),
        )


@dataclass
class Selection:
    """What the runner asks for; empty filters mean "everything the manifest declares"."""

    level: int | None = None
    dtypes: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    op_globs: tuple[str, ...] = ()
    # False (a subset run): cases with an `OUTSIDE_REASONS` reason are counted in
    # `SelectedCases.outside`, not recorded one by one
    record_outside: bool = True
    # True (a recheck of the exclusions): the cases the manifest declines are the
    # runnable ones, each with its `Decline`s in `SelectedCases.declined`, and the
    # cases it would run are filtered_by_selection
    declined_only: bool = False
    # with `record_outside` False, the run's shard (I, N; `in_shard`): only its own
    # outside cases are counted (a group with none there counts 0, so its names still
    # answer the filters); the runnable cases and the records are given for every shard
    shard: tuple[int, int] | None = None


@dataclass
class SelectedCases:
    """The runnable cases in a deterministic order, one record per excluded case, and
    the counts of excluded cases a subset run does not record (`outside`). With
    `Selection.declined_only`, `declined` names the entries that decline each runnable
    case and `declined_outside` counts the declined cases the filters left out."""

    runnable: list[CaseSpec] = field(default_factory=list)
    not_run: list[CaseRecord] = field(default_factory=list)
    outside: OutsideCounts = field(default_factory=dict)
    declined: dict[str, tuple[Decline, ...]] = field(default_factory=dict)
    declined_outside: DeclinedOutside = field(default_factory=dict)


@dataclass
class Verdict:
    """The judgement of one observed result; `mismatch` is a one-line summary,
    `tolerance` the one values were compared with (None when none was used), `note`
    facts the case observed and reports without judging them (torch.compile's graph
    breaks and recompiles); the record carries it in its detail."""

    ok: bool
    mismatch: str | None = None
    tolerance: ToleranceUsed | None = None
    note: str | None = None


def record_for(spec: CaseSpec | None, case_id: str, **fields: Any) -> CaseRecord:
    """A `CaseRecord` for a case: the spec's fields, then `fields` (status...).

    Without a spec (a crash of a case no source can rebuild) the id alone gives
    suite, op, variant, dtype and sample; level 1 and no expected source.
    """
    if spec is not None:
        base: dict[str, Any] = {
            "case_id": spec.case_id,
            "suite": spec.suite,
            "op": spec.op,
            "variant": spec.variant,
            "dtype": spec.dtype,
            "sample": spec.sample,
            "level": spec.level,
            "expected_source": ExpectedSource(spec.expected_source),
        }
    else:
        suite, op, variant, dtype, sample = split_case_id(case_id)
        base = {
            "case_id": case_id,
            "suite": suite,
            "op": op,
            "variant": variant,
            "dtype": dtype,
            "sample": sample,
            "level": 1,
            "expected_source": None,
        }
    base.setdefault("node_id", node_id_for_case(base["case_id"]))
    return CaseRecord(**{**base, **fields})


__all__ = [
    "CASE_SOURCE_GROUP",
    "DECLINE_KINDS",
    "CaseSpec",
    "Decline",
    "DeclinedOutside",
    "SelectedCases",
    "Selection",
    "Verdict",
    "record_for",
]
