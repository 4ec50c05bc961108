"""Selection: manifest + command-line filters -> runnable cases and `not_run` records.

Every case of the declared dtypes is accounted for: it either runs or gets exactly one
`not_run` record whose reason says why (the first that applies, in this order: command
line filters, level, OPS exclusions, dtype support, capability, device count,
comparison validity, sample limit). A case above the level is outside the run whatever
the manifest says of it, so a level-1 run records the declines of level 1 and level 8
those of every case. Reasons that do not depend on the sample are decided once per
(op, variant, dtype) group, which keeps the full matrix fast to select. With
`Selection.record_outside` False (every run's plan) the cases outside the run (command
line filters, level) are counted by reason, not recorded.

`Selection.declined_only` inverts the manifest's part (a recheck of the exclusions):
the cases that OPS, DTYPES or CAPABILITIES decline become runnable, each with every
entry that declines it (`SelectedCases.declined`), and the cases the manifest would
run are filtered_by_selection. The command-line filters and the per-case reasons
(device count, comparison validity, sample limit, level) apply as in a normal run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from torchcts_schema import (
    DTYPE_NAMES,
    Decline,
    Manifest,
    NotRunReason,
    gc_paused,
)

from torchcts_cases import index
from torchcts_cases.catalog import (
    OPINFO_SUITE,
    group_prefix,
    group_source,
    group_specs,
    opinfo_groups,
    overload_cases,
    primitive_edges,
)
from torchcts_cases.hand_listing import hand_listings
from torchcts_cases.not_run import GroupRecords, Reason, not_run_record
from torchcts_cases.overload_variants import SUITE as OVERLOAD_SUITE
from torchcts_cases.select_rules import CaseRules, GroupSamples, case_level
from torchcts_cases.spec import CaseSpec, SelectedCases, Selection


def all_suites() -> tuple[str, ...]:
    """Suite names: "opinfo" first, then the generated overload cases ("aten"),
    then the hand-written suites."""
    hand = sorted({c.suite for c in hand_listings()})
    return (OPINFO_SUITE, OVERLOAD_SUITE, *hand)


def candidate_dtypes(manifest: Manifest, selection: Selection) -> list[str]:
    """Dtypes to enumerate: those the manifest declares plus any asked for, in order."""
    for dtype in selection.dtypes:
        if dtype not in DTYPE_NAMES:
            raise ValueError(
                f"unknown dtype {dtype!r} (known: {', '.join(DTYPE_NAMES)})"
            )
    wanted = set(manifest.dtypes) | set(selection.dtypes)
    return [d for d in DTYPE_NAMES if d in wanted]


def select_cases(manifest: Manifest, selection: Selection) -> SelectedCases:
    """Runnable cases and one not_run record per excluded case."""
    unknown = [s for s in selection.suites if s not in all_suites()]
    if unknown:
        raise ValueError(
            f"unknown suite {unknown[0]!r} (known: {', '.join(all_suites())})"
        )
    level = selection.level if selection.level is not None else manifest.level
    if not 1 <= level <= 8:
        raise ValueError(f"level must be 1-8, not {level}")
    with gc_paused():
        return _select(manifest, selection, level)


def _select(manifest: Manifest, selection: Selection, level: int) -> SelectedCases:
    rules = CaseRules(manifest, selection, level)
    out = SelectedCases()
    dtypes = candidate_dtypes(manifest, selection)
    for dtype in [*dtypes, None]:
        for op, entry, variant, count in opinfo_groups(dtype):
            name = str(entry.get("name", op))
            edges = primitive_edges(op, entry, variant)
            found, declines = rules.decide(
                out,
                OPINFO_SUITE,
                op,
                name,
                dtype,
                variant,
                GroupSamples(entry, count, edges),
            )
            if found is None:
                found = _not_valid(entry, variant)
            _place_group(
                out, rules, op, entry, variant, dtype, count, edges, found, declines
            )
    for spec, packet in overload_cases():
        if spec.dtype not in dtypes:
            continue
        found, declines = rules.decide(
            out, spec.suite, spec.op, packet, spec.dtype, spec.capability, spec
        )
        _place(out, [spec], found, rules, declines)
    for hand in hand_listings():
        if hand.dtype is not None and hand.dtype not in dtypes:
            continue
        found, declines = rules.decide(
            out, hand.suite, hand.name, hand.name, hand.dtype, hand.capability, hand
        )
        found = found or rules.hand_reason(hand)
        _place(out, [hand.spec], found, rules, declines)
    return out


def _not_valid(entry: dict[str, Any], variant: str) -> Reason | None:
    """Why CPU cannot judge the group: OpInfo's compare-to-CPU skip (every variant
    but error inputs), or NaN and Inf this op's result is undefined on (nonfinite)."""
    if variant == "nonfinite" and entry.get(index.NONFINITE_NOT_VALID):
        return (
            NotRunReason.COMPARISON_NOT_VALID,
            str(entry[index.NONFINITE_NOT_VALID]),
        )
    if entry.get("not_valid") and variant != "error_inputs":
        return (NotRunReason.COMPARISON_NOT_VALID, str(entry["not_valid"]))
    return None


def _place_group(
    out: SelectedCases,
    rules: CaseRules,
    op: str,
    entry: dict[str, Any],
    variant: str,
    dtype: str | None,
    count: int,
    edges: Collection[int],
    found: Reason | None,
    declines: tuple[Decline, ...] = (),
) -> None:
    """`_place` for the samples of one OpInfo group without a spec per excluded case.

    Most of the matrix is not run, so its records come straight from the group's
    shared fields (`GroupRecords`).
    """
    family = entry["family"]
    prefix = group_prefix(op, variant, dtype)
    if found is not None and rules.counts_only(found):
        n = rules.share(prefix, range(count))
        rules.count(out, OPINFO_SUITE, op, dtype, found, n)
        return
    records = GroupRecords(
        OPINFO_SUITE, op, variant, dtype, group_source(entry, variant)
    )
    runnable: list[int] = []
    # counted per reason here and added once per group: the samples outside a
    # shallow level are most of the matrix (440,000 single counts at level 1)
    counted: dict[Reason, int] = {}
    samples: Iterable[int] = range(count)
    deeper = rules.deeper_samples(count)
    if deeper is not None:
        # every sample from `deeper` on is above the level (unless a primitive
        # edge): counted at once (a count keeps only the reason's kind), only the
        # others decided one by one
        late_edges = sorted(n for n in edges if deeper <= n < count)
        above = rules.share(prefix, range(deeper, count))
        counted[rules.level_reasons[rules.level + 1]] = above - rules.share(
            prefix, late_edges
        )
        samples = [*range(deeper), *late_edges]
    for sample in samples:
        level = case_level(family, variant, dtype, sample, sample in edges)
        reason = rules.case_reason(found, sample, level)
        if reason is None:
            runnable.append(sample)
            continue
        if rules.counts_only(reason):
            counted[reason] = counted.get(reason, 0) + rules.share(prefix, (sample,))
            continue
        case_id = f"{prefix}{sample}"
        out.not_run.append(records.record(case_id, sample, level, reason))
    for reason, n in counted.items():
        rules.count(out, OPINFO_SUITE, op, dtype, reason, n)
    if runnable:
        out.runnable.extend(group_specs(op, entry, variant, dtype, runnable))
        if declines:
            out.declined.update((f"{prefix}{n}", declines) for n in runnable)


def _place(
    out: SelectedCases,
    specs: Iterable[CaseSpec],
    found: Reason | None,
    rules: CaseRules,
    declines: tuple[Decline, ...] = (),
) -> None:
    for spec in specs:
        reason = rules.case_reason(found, spec.sample, spec.level)
        if reason is None:
            out.runnable.append(spec)
            if declines:
                out.declined[spec.case_id] = declines
        elif rules.counts_only(reason):
            n = rules.holds(spec.case_id)
            rules.count(out, spec.suite, spec.op, spec.dtype, reason, n)
        else:
            out.not_run.append(not_run_record(spec, *reason))


__all__ = ["all_suites", "candidate_dtypes", "not_run_record", "select_cases"]
