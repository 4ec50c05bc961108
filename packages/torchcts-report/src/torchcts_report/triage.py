"""The "next fix" section: the seed's six categories in order, with concrete actions.

The seed lists what to fix first: configuration problems invalidate every operator
result after them, so they lead, and missing evidence comes last. Each category gets
its count and every concrete action (renderers show the first few in full and list the
rest), each naming a real case, quoting its own message and giving the command that
reruns it. Which category a case or probe failure lands in is `findings`' job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts_schema import (
    NOT_RUN_MEANINGS,
    CaseRecord,
    NextFix,
    NotRunReason,
    RunMetadata,
    Status,
)

from torchcts_report.clusters import (
    error_signature,
    example_message,
    op_family,
    rerun_command,
)
from torchcts_report.clusters import normalise_message as _normalise
from torchcts_report.findings import (
    category_of,
    counted_category,
    probe_category,
    probe_note,
)
from torchcts_report.summary import RecordSummary, summarise
from torchcts_report.tallies import SELECTION_REASONS, next_fix_of

# actions shown in full per category; the rest are listed compactly after them
ACTIONS_PER_CATEGORY = 3


@dataclass(frozen=True)
class Action:
    """One concrete step: what to do, how many cases it covers, where to start.

    `summary` reads with the real message of the example case (numbers and addresses
    as recorded); cases are grouped by the normalised `signature`.
    """

    summary: str  # plain text; renderers escape it
    count: int
    example: str | None = None
    command: str | None = None
    signature: str | None = None
    probe: bool = False  # a failing probe's action: it covers no case


@dataclass(frozen=True)
class Triage:
    """One next-fix category with its count and every action, largest first."""

    category: NextFix
    count: int
    actions: tuple[Action, ...]
    probe_failures: int = 0  # failing probe rows among the actions

    @property
    def shown(self) -> tuple[Action, ...]:
        """The first actions, shown in full."""
        return self.actions[:ACTIONS_PER_CATEGORY]

    @property
    def rest(self) -> tuple[Action, ...]:
        """The actions after the first few, listed compactly (never dropped)."""
        return self.actions[ACTIONS_PER_CATEGORY:]


def build_triage(
    records: Iterable[CaseRecord],
    metadata: RunMetadata,
    probe_failures: list[dict[str, Any]],
    *,
    base: Path | None = None,
) -> list[Triage]:
    """All six categories in the seed's order, empty ones included (they say 0).

    `base` is where rerun commands are run from (see `clusters.manifest_of`).
    """
    return triage_of(summarise(list(records)), metadata, probe_failures, base=base)


def triage_of(
    summary: RecordSummary,
    metadata: RunMetadata,
    probe_failures: list[dict[str, Any]],
    *,
    base: Path | None = None,
) -> list[Triage]:
    """`build_triage` from a summary: records that only count are never visited."""
    pools: dict[NextFix, dict[tuple[str, ...], _Pool]] = {c: {} for c in NextFix}
    counts = dict.fromkeys(NextFix, 0)
    for record in summary.singles:
        category = category_of(record)
        if category is None:
            continue
        counts[category] += 1
        pool = _pool(pools[category], _key_of(category, record))
        pool.count += 1
        if pool.first is None or record.case_id < pool.first.case_id:
            pool.first = record
    # the counted groups hold (nearly) every not_run case: they add to one pool per
    # reason, whose example is looked up only if the pool makes it into the actions
    for group, count in summary.groups.items():
        if group.counted and group.reason is not None:
            category = counted_category(group.reason)
            counts[category] += count
            pool = _pool(pools[category], (group.reason.value,))
            pool.count += count
            pool.counted = group.reason
    probes: dict[NextFix, list[Action]] = {c: [] for c in NextFix}
    for row in probe_failures:
        category = probe_category(row)
        probes[category].append(_probe_action(category, row))
    out = []
    for category in NextFix:
        actions = list(probes[category])
        actions.extend(
            _record_actions(category, pools[category], summary, metadata, base)
        )
        out.append(
            Triage(category, counts[category], tuple(actions), len(probes[category]))
        )
    return out


@dataclass
class _Pool:
    """The cases behind one action: how many, and where its example comes from."""

    count: int = 0
    first: CaseRecord | None = None  # smallest case id among records seen one by one
    counted: NotRunReason | None = None  # a reason whose counted records it holds

    def example(self, summary: RecordSummary) -> str:
        """The smallest case id of the pool, one-by-one and counted records alike."""
        candidates = [self.first.case_id] if self.first is not None else []
        if self.counted is not None:
            candidates.append(summary.first_case_id(self.counted))
        return min(candidates)


def _pool(pools: dict[tuple[str, ...], _Pool], key: tuple[str, ...]) -> _Pool:
    pool = pools.get(key)
    if pool is None:
        pool = pools[key] = _Pool()
    return pool


def _probe_action(category: NextFix, row: dict[str, Any]) -> Action:
    kind = str(row.get("kind", "")).strip()
    probe = str(row.get("probe", "")).strip() or "(unnamed)"
    note = probe_note(row) or "(no note recorded)"
    if category is NextFix.CORRECTNESS:
        text = (
            f"The backend fails the {kind} probe {probe}: {note}. A backend finding "
            "(the probe checks what the device does), likely behind failures of "
            f"cases that use {probe}"
        )
    elif category is NextFix.IMPLEMENT_OR_DECLARE:
        text = (
            f"Implement what the {kind} probe {probe} exercises, or declare it "
            f"unsupported in the manifest: {note}"
        )
    elif kind == "harness":
        text = f"Fix the failing harness probe {probe}: {note}"
    else:
        text = f"Fix the setup: the {kind or 'unnamed'} probe {probe} fails: {note}"
    return Action(text, 1, signature=f"probe {kind} {probe}", probe=True)


def _record_actions(
    category: NextFix,
    pools: dict[tuple[str, ...], _Pool],
    summary: RecordSummary,
    metadata: RunMetadata,
    base: Path | None,
) -> list[Action]:
    template = _TEMPLATES[category]
    # the run's own filters are the user's choice, so manifest decisions come first
    ranked = sorted(
        pools.items(), key=lambda kv: (kv[0][0] in _SELECTION, -kv[1].count, kv[0])
    )
    actions = []
    for key, pool in ranked:
        example = pool.example(summary)
        first = pool.first
        # not_run cases rerun only after a manifest change: a command would mislead
        reruns = (
            pool.counted is None
            and category is not NextFix.SUPPORT_SURFACE
            and not (first is not None and first.status is Status.NOT_RUN)
        )
        command = (
            rerun_command(
                metadata,
                example,
                base=base,
                isolate=category is NextFix.CRASH_EVIDENCE,
            )
            if reruns
            else None
        )
        message = example_message(first) if first is not None else ""
        actions.append(
            Action(
                template(key, pool.count, message),
                pool.count,
                example,
                command,
                " / ".join(key),
            )
        )
    return actions


def _key_of(category: NextFix, record: CaseRecord) -> tuple[str, ...]:
    counted_kind = (
        record.not_run_reason is not None
        and next_fix_of(record) is NextFix.SUPPORT_SURFACE
    )
    if counted_kind or record.status is Status.NOT_RUN:
        return _not_run_key(record)
    if category is NextFix.MISSING_EVIDENCE:
        return _skip_key(record)
    return _cluster_key(record)


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


def _configuration(key: tuple[str, ...], n: int, message: str) -> str:
    if len(key) == 1:
        return _support(key, n, message)
    family, dtype, _ = key
    return f"Check the setup behind {family} ({dtype}), {n} case(s): {message}"


def _correctness(key: tuple[str, ...], n: int, message: str) -> str:
    if len(key) == 1:
        return _support(key, n, message)
    family, dtype, _ = key
    return f"Inspect {family} in {dtype}, {n} case(s): {message}"


def _implement(key: tuple[str, ...], n: int, message: str) -> str:
    if len(key) == 1:
        return _support(key, n, message)
    family, dtype, _ = key
    return (
        f"Implement {family} for {dtype} or remove it from the manifest, "
        f"{n} case(s): {message}"
    )


def _crash(key: tuple[str, ...], n: int, message: str) -> str:
    if len(key) == 1:
        return _support(key, n, message)
    family, dtype, _ = key
    return (
        f"Rerun {family} in {dtype} in isolation (--isolate all) and keep its "
        f"crash record, {n} case(s): {message}"
    )


def _support(key: tuple[str, ...], n: int, message: str = "") -> str:
    if len(key) != 1:
        return f"Decide whether {key[0]} belongs in the support surface: {message}"
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


def _evidence(key: tuple[str, ...], n: int, message: str) -> str:
    if len(key) == 1:
        return _support(key, n, message)
    family, _ = key
    return f"Find the evidence {family} lacks, {n} case(s) skipped: {message}"


_TEMPLATES: dict[NextFix, Callable[[tuple[str, ...], int, str], str]] = {
    NextFix.CONFIGURATION: _configuration,
    NextFix.CORRECTNESS: _correctness,
    NextFix.IMPLEMENT_OR_DECLARE: _implement,
    NextFix.CRASH_EVIDENCE: _crash,
    NextFix.SUPPORT_SURFACE: _support,
    NextFix.MISSING_EVIDENCE: _evidence,
}
