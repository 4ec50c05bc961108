"""The "next fix" section: the seed's six categories in order, with concrete actions.

The seed lists what to fix first: configuration problems invalidate every operator
result after them, so they lead, and missing evidence comes last. Each category gets
its count and the first few concrete actions, each naming a real case and the command
that reruns it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from torchcts_schema import (
    NOT_RUN_MEANINGS,
    CaseRecord,
    NextFix,
    NotRunReason,
    RunMetadata,
    Status,
)

from torchcts_report.clusters import error_signature, op_family, rerun_command
from torchcts_report.clusters import normalise_message as _normalise
from torchcts_report.summary import RecordSummary, summarise
from torchcts_report.tallies import SELECTION_REASONS, next_fix_of

ACTIONS_PER_CATEGORY = 3


@dataclass(frozen=True)
class Action:
    """One concrete step: what to do, how many cases it covers, where to start."""

    summary: str  # plain text; renderers escape it
    count: int
    example: str | None = None
    command: str | None = None


@dataclass(frozen=True)
class Triage:
    """One next-fix category with its count and first actions."""

    category: NextFix
    count: int
    actions: tuple[Action, ...]


def build_triage(
    records: Iterable[CaseRecord],
    metadata: RunMetadata,
    probe_failures: list[dict[str, Any]],
) -> list[Triage]:
    """All six categories in the seed's order, empty ones included (they say 0)."""
    return triage_of(summarise(list(records)), metadata, probe_failures)


def triage_of(
    summary: RecordSummary,
    metadata: RunMetadata,
    probe_failures: list[dict[str, Any]],
) -> list[Triage]:
    """`build_triage` from a summary: records that only count are never visited."""
    pools: dict[NextFix, dict[tuple[str, ...], _Pool]] = {c: {} for c in NextFix}
    counts = dict.fromkeys(NextFix, 0)
    for record in summary.singles:
        category = next_fix_of(record)
        if category is None:
            continue
        counts[category] += 1
        pool = _pool(pools[category], _STRATEGY[category][0](record))
        pool.count += 1
        if pool.first is None or record.case_id < pool.first:
            pool.first = record.case_id
    # the counted groups hold (nearly) every not_run case: they add to one pool per
    # reason, whose example is looked up only if the pool makes it into the actions
    support = NextFix.SUPPORT_SURFACE
    for group, count in summary.groups.items():
        if group.counted and group.reason is not None:
            counts[support] += count
            pool = _pool(pools[support], (group.reason.value,))
            pool.count += count
            pool.counted = group.reason
    out = []
    for category in NextFix:
        actions: list[Action] = []
        if category is NextFix.CONFIGURATION:
            actions.extend(_probe_actions(probe_failures))
        actions.extend(_record_actions(category, pools[category], summary, metadata))
        out.append(
            Triage(category, counts[category], tuple(actions[:ACTIONS_PER_CATEGORY]))
        )
    return out


@dataclass
class _Pool:
    """The cases behind one action: how many, and where its example comes from."""

    count: int = 0
    first: str | None = None  # smallest case id among the records seen one by one
    counted: NotRunReason | None = None  # a reason whose counted records it holds

    def example(self, summary: RecordSummary) -> str:
        """The smallest case id of the pool, one-by-one and counted records alike."""
        candidates = [self.first] if self.first is not None else []
        if self.counted is not None:
            candidates.append(summary.first_case_id(self.counted))
        return min(candidates)


def _pool(pools: dict[tuple[str, ...], _Pool], key: tuple[str, ...]) -> _Pool:
    pool = pools.get(key)
    if pool is None:
        pool = pools[key] = _Pool()
    return pool


def _probe_actions(probe_failures: list[dict[str, Any]]) -> list[Action]:
    actions = []
    for row in probe_failures:
        what = " ".join(str(row.get(k, "")) for k in ("kind", "probe")).strip()
        note = str(row.get("note") or row.get("error") or "")
        actions.append(
            Action(f"Fix the failing harness probe {what or '(unnamed)'}: {note}", 1)
        )
    return actions


def _record_actions(
    category: NextFix,
    pools: dict[tuple[str, ...], _Pool],
    summary: RecordSummary,
    metadata: RunMetadata,
) -> list[Action]:
    template = _STRATEGY[category][1]
    # the run's own filters are the user's choice, so manifest decisions come first
    ranked = sorted(
        pools.items(), key=lambda kv: (kv[0][0] in _SELECTION, -kv[1].count, kv[0])
    )
    actions = []
    for key, pool in ranked[:ACTIONS_PER_CATEGORY]:
        example = pool.example(summary)
        command = rerun_command(metadata, example) if _reruns(category) else None
        actions.append(Action(template(key, pool.count), pool.count, example, command))
    return actions


def _reruns(category: NextFix) -> bool:
    # not_run cases rerun only after a manifest change, so a rerun command would mislead
    return category is not NextFix.SUPPORT_SURFACE


def _cluster_key(record: CaseRecord) -> tuple[str, ...]:
    return (op_family(record.op), record.dtype or "(none)", error_signature(record))


def _not_run_key(record: CaseRecord) -> tuple[str, ...]:
    if record.not_run_reason is not None:
        return (record.not_run_reason.value,)
    return (error_signature(record),)


def _skip_key(record: CaseRecord) -> tuple[str, ...]:
    if record.status is Status.SKIPPED:
        return (op_family(record.op), _normalise(record.detail or "(no reason given)"))
    return (op_family(record.op), error_signature(record))


def _configuration(key: tuple[str, ...], n: int) -> str:
    family, dtype, signature = key
    return f"Check the setup behind {family} ({dtype}), {n} case(s): {signature}"


def _correctness(key: tuple[str, ...], n: int) -> str:
    family, dtype, signature = key
    return f"Inspect {family} in {dtype}, {n} case(s): {signature}"


def _implement(key: tuple[str, ...], n: int) -> str:
    family, dtype, signature = key
    return (
        f"Implement {family} for {dtype} or remove it from the manifest, "
        f"{n} case(s): {signature}"
    )


def _crash(key: tuple[str, ...], n: int) -> str:
    family, dtype, signature = key
    return (
        f"Rerun {family} in {dtype} in isolation and keep its crash record, "
        f"{n} case(s): {signature}"
    )


def _support(key: tuple[str, ...], n: int) -> str:
    (reason,) = key
    meaning = next((m for r, m in NOT_RUN_MEANINGS.items() if r.value == reason), "")
    because = f"{reason} ({meaning})" if meaning else reason
    advice = _SUPPORT_ADVICE.get(
        reason, "Decide whether they belong in the backend's support surface"
    )
    return f"{advice}: {n} case(s), {because}"


_SELECTION = {r.value for r in SELECTION_REASONS}
_SUPPORT_ADVICE = {
    NotRunReason.FILTERED_BY_SELECTION.value: "Left out by this run's own filters; "
    "run without them to cover these",
    NotRunReason.LEVEL_FILTERED.value: "Deeper than this run's level; raise the level "
    "to cover these",
    NotRunReason.SAMPLE_LIMIT.value: "Beyond the manifest's sample limit; raise "
    "MAX_SAMPLES_PER_OP to cover these",
    NotRunReason.REFERENCE_UNAVAILABLE.value: "No valid CPU reference; see the "
    "reference diagnostics, these are not backend results",
    NotRunReason.KNOWN_CRASH_NOT_EXECUTED.value: "Known crashes not executed; enable "
    "isolation so they run and leave evidence",
    NotRunReason.DEVICE_COUNT.value: "Need more devices than declared; run on a "
    "machine with more devices or declare DEVICE_COUNT",
    NotRunReason.COMPARISON_NOT_VALID.value: "PyTorch says a cross-device comparison "
    "is not valid for these; they need another test strategy",
}


def _evidence(key: tuple[str, ...], n: int) -> str:
    family, reason = key
    return f"Find the evidence {family} lacks, {n} case(s) skipped: {reason}"


_STRATEGY: dict[
    NextFix,
    tuple[
        Callable[[CaseRecord], tuple[str, ...]], Callable[[tuple[str, ...], int], str]
    ],
] = {
    NextFix.CONFIGURATION: (_cluster_key, _configuration),
    NextFix.CORRECTNESS: (_cluster_key, _correctness),
    NextFix.IMPLEMENT_OR_DECLARE: (_cluster_key, _implement),
    NextFix.CRASH_EVIDENCE: (_cluster_key, _crash),
    NextFix.SUPPORT_SURFACE: (_not_run_key, _support),
    NextFix.MISSING_EVIDENCE: (_skip_key, _evidence),
}
