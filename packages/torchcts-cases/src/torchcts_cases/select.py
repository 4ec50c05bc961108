"""Selection: manifest + command-line filters -> runnable cases and `not_run` records.

Every case of the declared dtypes is accounted for: it either runs or gets exactly one
`not_run` record whose reason says why (the first reason that applies, in the order of
`_reasons`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping

from torchcts_schema import (
    DTYPE_NAMES,
    CaseRecord,
    Manifest,
    NotRunReason,
    Status,
    default_next_fix,
    node_id_for_case,
)

from torchcts_cases import index
from torchcts_cases.catalog import OPINFO_SUITE, opinfo_cases
from torchcts_cases.spec import CaseSpec, SelectedCases, Selection
from torchcts_cases.suites import HandCase, all_hand_cases


def all_suites() -> tuple[str, ...]:
    """Suite names: "opinfo" first, then the hand-written suites."""
    hand = sorted({c.suite for c in all_hand_cases().values()})
    return (OPINFO_SUITE, *hand)


def candidate_dtypes(manifest: Manifest, selection: Selection) -> list[str]:
    """Dtypes to enumerate: those the manifest declares plus any asked for, in order."""
    for dtype in selection.dtypes:
        if dtype not in DTYPE_NAMES:
            raise ValueError(
                f"unknown dtype {dtype!r} (known: {', '.join(DTYPE_NAMES)})"
            )
    wanted = set(manifest.dtypes) | set(selection.dtypes)
    return [d for d in DTYPE_NAMES if d in wanted]


def iter_cases(manifest: Manifest, selection: Selection) -> Iterator[CaseSpec]:
    """Every candidate case, in the deterministic run order."""
    suites = selection.suites
    if not suites or OPINFO_SUITE in suites:
        for dtype in candidate_dtypes(manifest, selection):
            yield from opinfo_cases(dtype)
        yield from opinfo_cases(None)
    dtypes = set(candidate_dtypes(manifest, selection))
    for hand in all_hand_cases().values():
        assert hand.spec is not None
        if hand.dtype is None or hand.dtype in dtypes:
            yield hand.spec


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
    rules = _Rules(manifest, selection, level)
    out = SelectedCases()
    hand = all_hand_cases()
    for spec in iter_cases(manifest, selection):
        found = rules.reason(spec, hand)
        if found is None:
            out.runnable.append(spec)
        else:
            out.not_run.append(not_run_record(spec, *found))
    return out


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
        next_fix=default_next_fix(Status.NOT_RUN),
        not_run_reason=reason,
        detail=detail,
    )


class _Rules:
    def __init__(self, manifest: Manifest, selection: Selection, level: int) -> None:
        self.m = manifest
        self.sel = selection
        self.level = level
        self.dtype_rx = {
            d: re.compile(v) for d, v in manifest.dtypes.items() if isinstance(v, str)
        }
        self.entries: dict[str | None, dict[str, dict[str, object]]] = {}

    def _entry(self, spec: CaseSpec) -> dict[str, object]:
        key = spec.dtype
        if key not in self.entries:
            self.entries[key] = index.shard(key or index.ERRORS_SHARD)
        return self.entries[key][spec.op]

    def _name(self, spec: CaseSpec) -> str:
        if spec.suite != OPINFO_SUITE:
            return spec.op
        return str(self._entry(spec).get("name", spec.op))

    def reason(
        self, spec: CaseSpec, hand: Mapping[str, HandCase]
    ) -> tuple[NotRunReason, str] | None:
        sel, m = self.sel, self.m
        if sel.suites and spec.suite not in sel.suites:
            return (
                NotRunReason.FILTERED_BY_SELECTION,
                f"suite {spec.suite} not selected",
            )
        if sel.dtypes and spec.dtype is not None and spec.dtype not in sel.dtypes:
            return (
                NotRunReason.FILTERED_BY_SELECTION,
                f"dtype {spec.dtype} not selected",
            )
        name = self._name(spec)
        if sel.op_globs and not _matches(spec.op, name, sel.op_globs):
            return NotRunReason.FILTERED_BY_SELECTION, "op does not match --op globs"
        for glob, why in m.ops_exclude.items():
            if _matches(spec.op, name, (glob,)):
                return NotRunReason.OP_EXCLUDED, f"OPS.exclude[{glob!r}]: {why}"
        if m.ops_include and not _matches(spec.op, name, m.ops_include):
            return NotRunReason.OP_EXCLUDED, "not in OPS.include"
        if spec.dtype is not None:
            support = m.dtypes.get(spec.dtype, False)
            if support is False:
                return (
                    NotRunReason.DTYPE_NOT_SUPPORTED,
                    f"DTYPES[{spec.dtype!r}] is False or absent",
                )
            rx = self.dtype_rx.get(spec.dtype)
            if rx is not None and not (rx.fullmatch(spec.op) or rx.fullmatch(name)):
                return (
                    NotRunReason.DTYPE_NOT_SUPPORTED,
                    f"op not matched by DTYPES[{spec.dtype!r}]",
                )
        if spec.capability not in m.capabilities:
            return (
                NotRunReason.CAPABILITY_NOT_DECLARED,
                f"capability {spec.capability} not in CAPABILITIES",
            )
        if spec.suite == OPINFO_SUITE:
            not_valid = self._entry(spec).get("not_valid")
            if not_valid and spec.variant != "error_inputs":
                return NotRunReason.COMPARISON_NOT_VALID, str(not_valid)
            limit = m.max_samples_per_op
            if limit is not None and spec.sample is not None and spec.sample >= limit:
                return NotRunReason.SAMPLE_LIMIT, f"MAX_SAMPLES_PER_OP is {limit}"
        else:
            case = hand[spec.case_id]
            if getattr(case, "min_devices", 1) > m.device_count:
                return (
                    NotRunReason.DEVICE_COUNT,
                    f"needs {getattr(case, 'min_devices', 1)} devices",
                )
            if getattr(case, "needs_other_device", False) and m.device == "cpu":
                return NotRunReason.DEVICE_COUNT, "needs a device other than the CPU"
        if spec.level > self.level:
            return NotRunReason.LEVEL_FILTERED, f"level {spec.level} > {self.level}"
        return None


def _matches(op: str, name: str, globs: tuple[str, ...] | list[str]) -> bool:
    """An op matches by its full segment or by its OpInfo name (without variant)."""
    return any(
        fnmatch.fnmatchcase(op, g) or fnmatch.fnmatchcase(name, g) for g in globs
    )
