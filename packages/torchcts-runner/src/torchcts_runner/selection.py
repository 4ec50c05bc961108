"""Which cases this run executes: the case source's selection, a shard, resume, node ids.

Every process that collects (each xdist worker, or the single local process) calls
`plan_cases` with the same inputs and gets the same ordered list; the controller
calls it too for not_run accounting and progress totals.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from glob import escape as glob_escape
from typing import Any, Protocol

from torchcts_schema import (
    OUTSIDE_REASONS,
    CaseRecord,
    CaseSpec,
    Decline,
    DeclinedOutside,
    Manifest,
    NotRunReason,
    OutsideCounts,
    case_id_for_node,
    count_outside,
    in_shard,
    split_case_id,
    unmatched_filter,
)

from torchcts_runner.casesource import CaseSource


class SelectionError(Exception):
    """A selection argument that matches nothing or makes no sense."""


class RecheckCases(Protocol):
    """A recheck's cases: the source's declined ones plus what known-crash rules
    cover (`torchcts_runner.recheck_plan`), each with its declining entries."""

    rule_sources: dict[str, str]  # rule id -> the ledger it came from
    rules_outside: DeclinedOutside  # rules whose cases the filters may narrow

    def __call__(
        self,
        source: CaseSource,
        manifest: Manifest,
        selected: Any,
        fields: dict[str, Any],
    ) -> tuple[list[CaseSpec], dict[str, tuple[Decline, ...]]]: ...


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"2/4"`` -> (2, 4); shards count from 1."""
    if not text:
        return None
    try:
        index, total = (int(part) for part in text.split("/"))
    except ValueError:
        raise SelectionError(f"--shard {text!r}: expected I/N, e.g. 1/4") from None
    if total < 1 or not 1 <= index <= total:
        raise SelectionError(f"--shard {text!r}: need 1 <= I <= N")
    return index, total


@dataclass
class CasePlan:
    """The ordered cases to collect, the not_run records of the selection, and (for a
    subset run) the cases outside it, counted by reason instead of recorded."""

    planned: list[CaseSpec]  # in the shard, before resume and node-id filters
    to_run: list[CaseSpec]  # what becomes pytest items
    not_run: list[CaseRecord]
    outside: OutsideCounts = field(default_factory=dict)
    # a recheck of the exclusions: the entries declining each planned case, the
    # declined cases the filters left out, and where each known-crash rule lives
    declined: dict[str, tuple[Decline, ...]] = field(default_factory=dict)
    declined_outside: DeclinedOutside = field(default_factory=dict)
    rule_sources: dict[str, str] = field(default_factory=dict)

    def outside_by_reason(self) -> dict[str, int]:
        """How many cases each outside reason covers (what the metadata keeps)."""
        totals: dict[str, int] = {}
        for (_suite, _op, _dtype, reason), n in self.outside.items():
            totals[reason] = totals.get(reason, 0) + n
        return dict(sorted(totals.items()))

    @property
    def planned_ids(self) -> list[str]:
        """Ids of every planned case (what a complete run has a record for)."""
        return [s.case_id for s in self.planned]


def _counts_shards(source: CaseSource, recheck: RecheckCases | None) -> bool:
    """Whether the source's selection takes a shard (a recheck never gives it one:
    the cases it adds are the manifest's declined ones, counted whole)."""
    selection = getattr(source.module, "Selection", None)
    return recheck is None and "shard" in getattr(selection, "__dataclass_fields__", {})


def plan_cases(
    source: CaseSource,
    manifest: Manifest,
    *,
    level: int | None,
    dtypes: Sequence[str],
    suites: Sequence[str],
    op_globs: Sequence[str],
    shard: tuple[int, int] | None,
    done: Collection[str] = (),
    node_ids: Sequence[str] = (),
    record_outside: bool = True,
    recheck: RecheckCases | None = None,
) -> CasePlan:
    """Select, shard, drop finished cases (resume) and apply node-id arguments.

    With `record_outside` False (a subset run) the cases outside the level and the
    filters are counted, not recorded, and node ids narrow the filters to their own
    suites, ops and dtypes, so a rerun of one case never walks the universe. With
    `recheck` (``--recheck-exclusions``) the source selects what the manifest
    declines, and `recheck` adds the cases known-crash rules cover.
    """
    narrowed = (
        _narrowed(node_ids, dtypes, suites, op_globs)
        if node_ids and not record_outside
        else (tuple(dtypes), tuple(suites), tuple(op_globs))
    )
    fields: dict[str, Any] = {}
    if not record_outside and (shard is None or _counts_shards(source, recheck)):
        # a source counts a whole group at once, or, given the shard, its part of
        # each group; one that cannot records every case, counted below by shard
        fields["record_outside"] = False
        if shard is not None:
            fields["shard"] = shard
    fields.update(level=level, dtypes=narrowed[0], suites=narrowed[1])
    fields["op_globs"] = narrowed[2]
    if recheck is not None:
        fields["declined_only"] = True
    try:
        selected = source.select_cases(manifest, source.selection(**fields))
    except ValueError as exc:  # the contract: a selection the source cannot make
        raise SelectionError(str(exc)) from None
    problem = unmatched_filter(selected, op_globs, dtypes, suites)
    if problem is not None:
        raise SelectionError(problem)
    # a sharded count of 0 names a group of the manifest for the check above only
    outside: OutsideCounts = {
        key: n for key, n in getattr(selected, "outside", {}).items() if n
    }
    runnable = list(selected.runnable)
    declined: dict[str, tuple[Decline, ...]] = {}
    if recheck is not None:
        runnable, declined = recheck(source, manifest, selected, fields)
        _uncount(outside, runnable[len(selected.runnable) :])
    planned = [s for s in runnable if in_shard(s.case_id, shard)]
    not_run = []
    for record in selected.not_run:
        if not in_shard(record.case_id, shard):
            continue
        reason = record.not_run_reason
        if not record_outside and reason in OUTSIDE_REASONS:
            # a source that records everything: count here, as a subset run must
            count_outside(outside, record.suite, record.op, record.dtype, reason)
        else:
            not_run.append(record)
    wanted = None
    if node_ids:
        wanted = set()
        known = {s.case_id for s in planned}
        for node_id in node_ids:
            case_id = case_id_for_node(node_id)
            if case_id is None or case_id not in known:
                raise SelectionError(
                    f"{node_id}: not a case of this manifest and selection"
                    + (f" (shard {shard[0]}/{shard[1]})" if shard else "")
                )
            wanted.add(case_id)
        if not record_outside:
            # the narrowed filters also select the ids' neighbours (bmm's node id
            # selects bmm.triton_optimized too): outside the run, so counted
            for spec in planned:
                if spec.case_id not in wanted:
                    count_outside(
                        outside,
                        spec.suite,
                        spec.op,
                        spec.dtype,
                        NotRunReason.FILTERED_BY_SELECTION,
                    )
            planned = [s for s in planned if s.case_id in wanted]
    done_set = set(done)
    to_run = [
        s
        for s in planned
        if s.case_id not in done_set and (wanted is None or s.case_id in wanted)
    ]
    plan = CasePlan(planned, to_run, not_run, outside)
    if recheck is not None:
        ids = set(plan.planned_ids)
        plan.declined = {k: v for k, v in declined.items() if k in ids}
        plan.declined_outside = {
            **dict(getattr(selected, "declined_outside", None) or {}),
            **recheck.rules_outside,
        }
        plan.rule_sources = recheck.rule_sources
    return plan


def _uncount(outside: OutsideCounts, specs: Sequence[CaseSpec]) -> None:
    """Cases a recheck adds from the manifest's own selection (a known-crash rule
    covers them) run after all: no longer counted as outside it."""
    for spec in specs:
        key = (
            spec.suite,
            spec.op,
            spec.dtype,
            NotRunReason.FILTERED_BY_SELECTION.value,
        )
        if outside.get(key, 0) > 1:
            outside[key] -= 1
        else:
            outside.pop(key, None)


def _narrowed(
    node_ids: Sequence[str],
    dtypes: Sequence[str],
    suites: Sequence[str],
    op_globs: Sequence[str],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The filters of a node-id run: each filter the user left empty becomes the
    node ids' own values, when every id is a well-formed case id. The exact ids are
    applied after selection; this only keeps selection from walking the rest."""
    parts = []
    for node_id in node_ids:
        case_id = case_id_for_node(node_id)
        try:
            parts.append(split_case_id(case_id or ""))
        except ValueError:
            return tuple(dtypes), tuple(suites), tuple(op_globs)
    own_dtypes = sorted({p[3] for p in parts if p[3] is not None})
    if not dtypes and all(p[3] is not None for p in parts):
        dtypes = own_dtypes
    if not suites:
        suites = sorted({p[0] for p in parts})
    if not op_globs:
        op_globs = sorted({glob_escape(p[1]) for p in parts})
    return tuple(dtypes), tuple(suites), tuple(op_globs)


__all__ = [
    "CasePlan",
    "RecheckCases",
    "SelectionError",
    "in_shard",
    "parse_shard",
    "plan_cases",
]
