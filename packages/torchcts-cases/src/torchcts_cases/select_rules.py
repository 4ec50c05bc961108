"""Why a case is not run, for `select`: the command-line filters, the manifest's
declines, the level and the sample limit (each decided once per group where it does
not depend on the sample), and the counting of the cases outside a run, of its own
shard only when the selection names one.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Collection, Iterable
from typing import Any

from torchcts_schema import (
    OUTSIDE_REASONS,
    Decline,
    Manifest,
    NotRunReason,
    count_outside,
    dtype_claims,
    in_shard,
)

from torchcts_cases.hand_listing import HandListing
from torchcts_cases.levels import opinfo_level, samples_within
from torchcts_cases.not_run import Reason
from torchcts_cases.spec import CaseSpec, SelectedCases, Selection

# a case's level from a handful of small values: the matrix repeats each many times
case_level = functools.lru_cache(maxsize=1 << 16)(opinfo_level)
RUN_BY_MANIFEST: Reason = (
    NotRunReason.FILTERED_BY_SELECTION,
    "the manifest runs it; --recheck-exclusions runs only what it declines",
)


class GroupSamples:
    """The samples of one OpInfo group, counted at the selected level on demand."""

    def __init__(
        self, entry: dict[str, Any], count: int, edges: Collection[int]
    ) -> None:
        self.entry = entry
        self.count = count
        self.edges = edges  # the group's level-1 samples of a primitive op

    def in_level(self, rules: CaseRules, variant: str, dtype: str | None) -> int:
        """How many samples the level and the sample limit leave in the run."""
        family = self.entry["family"]
        return sum(
            rules.opinfo_reason(
                n, case_level(family, variant, dtype, n, n in self.edges)
            )
            is None
            for n in range(self.count)
        )


class CaseRules:
    """The reasons of one selection (manifest, filters, level), asked per group and
    per case, and the counting of what is outside the run."""

    def __init__(self, manifest: Manifest, selection: Selection, level: int) -> None:
        self.m = manifest
        self.sel = selection
        self.level = level
        self.dtype_rx = {
            d: re.compile(v) for d, v in manifest.dtypes.items() if isinstance(v, str)
        }
        self.limit = manifest.max_samples_per_op
        self.limit_reason: Reason = (
            NotRunReason.SAMPLE_LIMIT,
            f"MAX_SAMPLES_PER_OP is {self.limit}",
        )
        # one string per level, shared by every record that level filters
        self.level_reasons: dict[int, Reason] = _LevelReasons(level)

    def counts_only(self, reason: Reason) -> bool:
        """Is a case excluded for `reason` counted rather than recorded?"""
        return not self.sel.record_outside and reason[0] in OUTSIDE_REASONS

    def deeper_samples(self, count: int) -> int | None:
        """The first sample of a group of `count` from which every one but a
        primitive edge is level_filtered and counted, not recorded (None: decide
        each sample). Only where level comes first and is counted: never in a
        recheck or a run recording what is outside it."""
        if self.sel.declined_only or self.sel.record_outside:
            return None
        deeper = samples_within(self.level)
        return deeper if deeper is not None and deeper < count else None

    def case_reason(
        self, found: Reason | None, sample: int | None, level: int
    ) -> Reason | None:
        """One case's reason from its group's (`found`), its sample and its level.

        A case above the level is level_filtered before any manifest entry
        declining it is looked at (a command-line filter still comes first): so a
        shallow run's artifacts hold the declines of its own depth only (simdev's
        level 1 recorded some 73,000 declined cases of levels 2-8, a 7 MB journal
        for 7,400 executed cases), and a sharded run of a source that cannot count
        by shard, which records what an unsharded one counts, gives every case the
        same reason. A recheck keeps the
        manifest first: its runnable cases are the declined ones.
        """
        if found is not None and found[0] in OUTSIDE_REASONS:
            return found
        if level > self.level and not self.sel.declined_only:
            return self.level_reasons[level]
        return found or self.opinfo_reason(sample, level)

    def count(
        self,
        out: SelectedCases,
        suite: str,
        op: str,
        dtype: str | None,
        reason: Reason,
        n: int,
    ) -> None:
        """Count `n` cases of one group outside the selection (a count of 0 only in a
        shard: the group is the manifest's, its cases in other shards)."""
        if n or self.sel.shard is not None:
            count_outside(out.outside, suite, op, dtype, reason[0], n)

    def share(self, prefix: str, samples: Collection[int]) -> int:
        """How many of a group's `samples` (case ids ``prefix + n``) the run's shard
        holds: all of them, counted without an id, when there is no shard."""
        shard = self.sel.shard
        if shard is None:
            return len(samples)
        return sum(in_shard(f"{prefix}{n}", shard) for n in samples)

    def holds(self, case_id: str) -> int:
        """1 when the run's shard holds the case (every case without a shard)."""
        return int(in_shard(case_id, self.sel.shard))

    def decide(
        self,
        out: SelectedCases,
        suite: str,
        op: str,
        name: str,
        dtype: str | None,
        capability: str,
        samples: GroupSamples | HandListing | CaseSpec,
    ) -> tuple[Reason | None, tuple[Decline, ...]]:
        """A group's shared reason and, in a recheck, the entries declining it.

        In a recheck a group the filters leave out still counts its declined cases
        per entry (`SelectedCases.declined_outside`): the report must say which
        entries the selection did not cover whole.
        """
        filtered = self.filter_reason(suite, op, name, dtype)
        if not self.sel.declined_only:
            if filtered is not None:
                return filtered[1], ()
            return self.manifest_reason(op, name, dtype, capability), ()
        declines = self.declines(op, name, dtype, capability)
        if filtered is not None:
            n = self._would_run(samples, capability, dtype) if declines else 0
            if n:
                for decline in declines:
                    key = (decline, filtered[0])
                    out.declined_outside[key] = out.declined_outside.get(key, 0) + n
            return filtered[1], ()
        return (RUN_BY_MANIFEST if not declines else None), declines

    def _would_run(
        self,
        samples: GroupSamples | HandListing | CaseSpec,
        variant: str,
        dtype: str | None,
    ) -> int:
        """How many cases of a group its per-case reasons leave runnable."""
        if isinstance(samples, GroupSamples):
            return samples.in_level(self, variant, dtype)
        if isinstance(samples, CaseSpec):
            return int(self.sample_reason(samples) is None)
        blocked = self.hand_reason(samples) or self.sample_reason(samples.spec)
        return int(blocked is None)

    def group_reason(
        self, suite: str, op: str, name: str, dtype: str | None, capability: str
    ) -> Reason | None:
        """Reasons shared by every sample of one (op, variant, dtype) group."""
        filtered = self.filter_reason(suite, op, name, dtype)
        if filtered is not None:
            return filtered[1]
        return self.manifest_reason(op, name, dtype, capability)

    def filter_reason(
        self, suite: str, op: str, name: str, dtype: str | None
    ) -> tuple[str, Reason] | None:
        """The command-line filter ("suite", "dtype" or "op") leaving a group out."""
        sel = self.sel
        if sel.suites and suite not in sel.suites:
            return "suite", (
                NotRunReason.FILTERED_BY_SELECTION,
                f"suite {suite} not selected",
            )
        if sel.dtypes and dtype is not None and dtype not in sel.dtypes:
            return "dtype", (
                NotRunReason.FILTERED_BY_SELECTION,
                f"dtype {dtype} not selected",
            )
        if sel.op_globs and not _matches(op, name, sel.op_globs):
            return "op", (
                NotRunReason.FILTERED_BY_SELECTION,
                "op does not match the op filter",
            )
        return None

    def manifest_reason(
        self, op: str, name: str, dtype: str | None, capability: str
    ) -> Reason | None:
        """The first manifest entry that declines a group, as a not_run reason."""
        m = self.m
        for glob, why in m.ops_exclude.items():
            if _matches(op, name, (glob,)):
                return NotRunReason.OP_EXCLUDED, f"OPS.exclude[{glob!r}]: {why}"
        if m.ops_include and not _matches(op, name, m.ops_include):
            return NotRunReason.OP_EXCLUDED, "not in OPS.include"
        if dtype is not None:
            support = self.dtype_rx.get(dtype, m.dtypes.get(dtype, False))
            if support is False:
                return NotRunReason.DTYPE_NOT_SUPPORTED, f"DTYPES[{dtype!r}] is False"
            if not dtype_claims(support, op, name):
                return (
                    NotRunReason.DTYPE_NOT_SUPPORTED,
                    f"op not matched by DTYPES[{dtype!r}]",
                )
        if capability not in m.capabilities:
            return (
                NotRunReason.CAPABILITY_NOT_DECLARED,
                f"capability {capability} not in CAPABILITIES",
            )
        return None

    def declines(
        self, op: str, name: str, dtype: str | None, capability: str
    ) -> tuple[Decline, ...]:
        """Every manifest entry that declines a group (`manifest_reason` names the
        first): removing one entry runs a case only when no other declines it."""
        m = self.m
        found = [
            Decline("ops_exclude", glob)
            for glob in m.ops_exclude
            if _matches(op, name, (glob,))
        ]
        if m.ops_include and not _matches(op, name, m.ops_include):
            found.append(Decline("ops_include", "", op))
        if dtype is not None:
            rx = self.dtype_rx.get(dtype)
            if m.dtypes.get(dtype, False) is False:
                found.append(Decline("dtype", dtype))
            elif rx is not None and not (rx.fullmatch(op) or rx.fullmatch(name)):
                found.append(Decline("dtype_regex", dtype, op))
        if capability not in m.capabilities:
            found.append(Decline("capability", capability))
        return tuple(found)

    def hand_reason(self, case: HandListing) -> Reason | None:
        """Device requirements of a hand-written case."""
        if case.min_devices > self.m.device_count:
            return NotRunReason.DEVICE_COUNT, f"needs {case.min_devices} devices"
        if case.needs_other_device and self.m.device == "cpu":
            return NotRunReason.DEVICE_COUNT, "needs a device other than the CPU"
        return None

    def sample_reason(self, spec: CaseSpec) -> Reason | None:
        """Per-case reasons: the sample limit, then the level."""
        return self.opinfo_reason(spec.sample, spec.level)

    def opinfo_reason(self, sample: int | None, level: int) -> Reason | None:
        """`sample_reason` from the two fields it reads."""
        if self.limit is not None and sample is not None and sample >= self.limit:
            return self.limit_reason
        if level > self.level:
            return self.level_reasons[level]
        return None


class _LevelReasons(dict[int, Reason]):
    """The level_filtered reason of each case level above the selected one."""

    def __init__(self, selected: int) -> None:
        super().__init__()
        self.selected = selected

    def __missing__(self, level: int) -> Reason:
        reason = (NotRunReason.LEVEL_FILTERED, f"level {level} > {self.selected}")
        self[level] = reason
        return reason


def _matches(op: str, name: str, globs: Iterable[str]) -> bool:
    """An op matches by its full segment or by its OpInfo name (without variant)."""
    match = _glob_matcher(tuple(globs))
    return match(op) is not None or match(name) is not None


@functools.lru_cache(maxsize=1024)
def _glob_matcher(globs: tuple[str, ...]) -> Callable[[str], object]:
    """One compiled pattern for any of `globs` (fnmatchcase's own translation):
    every group of the matrix is matched against the filter's and the manifest's
    globs, a few hundred thousand single fnmatch calls with ``--op`` given 15 times."""
    if not globs:
        return lambda text: None
    pattern = "|".join(f"(?:{fnmatch.translate(glob)})" for glob in globs)
    return re.compile(pattern).match


__all__ = ["RUN_BY_MANIFEST", "CaseRules", "GroupSamples", "case_level"]
