"""Selection builds not_run records per group; the result equals the per-case rules."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import pytest
from torchcts_cases import SelectedCases, Selection, not_run_record, select_cases
from torchcts_cases import select as select_module
from torchcts_cases.catalog import (
    OPINFO_SUITE,
    group_specs,
    opinfo_groups,
    overload_cases,
)
from torchcts_cases.select_rules import CaseRules
from torchcts_cases.spec import CaseSpec
from torchcts_cases.suites import all_hand_cases
from torchcts_schema import CAPABILITY_NAMES, Manifest, NotRunReason

MakeManifest = Callable[..., Manifest]


def _sample_reason(
    manifest: Manifest, level: int, spec: CaseSpec
) -> tuple[NotRunReason, str] | None:
    limit = manifest.max_samples_per_op
    if limit is not None and spec.sample is not None and spec.sample >= limit:
        return NotRunReason.SAMPLE_LIMIT, f"MAX_SAMPLES_PER_OP is {limit}"
    if spec.level > level:
        return NotRunReason.LEVEL_FILTERED, f"level {spec.level} > {level}"
    return None


def _reference(manifest: Manifest, selection: Selection) -> SelectedCases:
    """Selection the straightforward way: one spec, then one decision, per case."""
    level = selection.level if selection.level is not None else manifest.level
    rules = CaseRules(manifest, selection, level)
    out = SelectedCases()
    dtypes = select_module.candidate_dtypes(manifest, selection)

    def place(specs: Any, found: Any) -> None:
        for spec in specs:
            # the documented order: command-line filters, then the level, then the
            # manifest's reasons (a recheck keeps the manifest first)
            filtered = (
                found is not None and found[0] is NotRunReason.FILTERED_BY_SELECTION
            )
            if spec.level > level and not filtered and not selection.declined_only:
                reason = (NotRunReason.LEVEL_FILTERED, f"level {spec.level} > {level}")
            else:
                reason = found or _sample_reason(manifest, level, spec)
            if reason is None:
                out.runnable.append(spec)
            else:
                out.not_run.append(not_run_record(spec, *reason))

    for dtype in [*dtypes, None]:
        for op, entry, variant, count in opinfo_groups(dtype):
            name = str(entry.get("name", op))
            found = rules.group_reason(OPINFO_SUITE, op, name, dtype, variant)
            undefined = (
                entry.get("nonfinite_not_valid") if variant == "nonfinite" else None
            )
            if found is None and undefined:
                found = (NotRunReason.COMPARISON_NOT_VALID, str(undefined))
            if found is None and entry.get("not_valid") and variant != "error_inputs":
                found = (NotRunReason.COMPARISON_NOT_VALID, str(entry["not_valid"]))
            place(group_specs(op, entry, variant, dtype, range(count)), found)
    for spec, packet in overload_cases():
        if spec.dtype in dtypes:
            found = rules.group_reason(
                spec.suite, spec.op, packet, spec.dtype, spec.capability
            )
            place([spec], found)
    for hand in all_hand_cases().values():
        if hand.dtype is not None and hand.dtype not in dtypes:
            continue
        found = rules.group_reason(
            hand.suite, hand.name, hand.name, hand.dtype, hand.capability
        ) or rules.hand_reason(hand)
        place([hand.spec], found)
    return out


MANIFESTS: list[dict[str, Any]] = [
    {
        "DTYPES": {"float32": True, "float16": r"^(add|sum|mul)$", "int64": False},
        "CAPABILITIES": list(CAPABILITY_NAMES),
        "LEVEL": 1,
    },
    {
        "DTYPES": {"float32": True, "bool": True},
        "CAPABILITIES": ["forward", "backward", "error_inputs", "views"],
        "LEVEL": 4,
        "MAX_SAMPLES_PER_OP": 5,
        "OPS": {"exclude": {"sub": "not yet", "linalg.*": "no solver"}},
    },
    {
        "DTYPES": {"float64": True},
        "CAPABILITIES": list(CAPABILITY_NAMES),
        "LEVEL": 8,
        "OPS": {"include": ["add*", "nn.functional.*", "sort"]},
    },
]
SELECTIONS = [
    Selection(),
    Selection(level=2, dtypes=("float32",), suites=("opinfo", "views")),
    Selection(level=3, op_globs=("a*", "masked.*")),
]


@pytest.mark.parametrize(
    ("keys", "selection"),
    [*zip(MANIFESTS, SELECTIONS, strict=True), (MANIFESTS[1], SELECTIONS[1])],
    ids=["level1-all", "limit_exclude-dtype_suites", "include-globs", "limit-globs"],
)
def test_selection_equals_the_per_case_reference(
    make_manifest: MakeManifest, keys: dict[str, Any], selection: Selection
) -> None:
    """Same runnable specs in the same order, same not_run records field for field."""
    manifest = make_manifest(**keys)
    got = select_cases(manifest, selection)
    want = _reference(manifest, selection)
    assert got.runnable == want.runnable
    assert len(got.not_run) == len(want.not_run)
    assert [r.to_dict() for r in got.not_run] == [r.to_dict() for r in want.not_run]
    assert got.not_run == want.not_run
    assert got.runnable and len({r.not_run_reason for r in got.not_run}) >= 3


@pytest.mark.parametrize("enabled", [True, False])
def test_selection_leaves_the_collector_as_it_was(
    make_manifest: MakeManifest, enabled: bool
) -> None:
    """The garbage collector paused during selection is enabled again only if it was."""
    manifest = make_manifest(DTYPES={"float32": True}, CAPABILITIES=["forward"])
    if not enabled:
        gc.disable()
    try:
        select_cases(manifest, Selection(op_globs=("add",)))
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
