"""Hand-written suites: every check passes on CPU, and broken properties are caught."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from torchcts_cases import get_case, prepare
from torchcts_cases.suites import all_hand_cases
from torchcts_schema import (
    CAPABILITY_NAMES,
    SUITE_CAPABILITIES,
    ExpectedSource,
    Manifest,
)

ALL_CAPS = list(CAPABILITY_NAMES)
MakeManifest = Callable[..., Manifest]
RUNNABLE_ON_CPU = sorted(
    cid
    for cid, c in all_hand_cases().items()
    if not c.needs_other_device and c.min_devices == 1 and c.level < 7
)


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """A CPU manifest with every capability."""
    return make_manifest(CAPABILITIES=ALL_CAPS, DTYPES={"float32": True})


@pytest.mark.parametrize("case_id", RUNNABLE_ON_CPU)
def test_hand_case_passes_on_cpu(case_id: str, manifest: Manifest) -> None:
    """Validation: each hand-written check judged on CPU passes."""
    case = prepare(get_case(case_id), manifest)
    verdict = case.judge(case.reference(), case.run_on("cpu"))
    assert verdict.ok, verdict.mismatch


def test_every_suite_capability_has_cases() -> None:
    """Each hand-written suite capability in the schema has at least one case."""
    caps = {c.capability for c in all_hand_cases().values()}
    assert set(SUITE_CAPABILITIES) <= caps


def test_broken_aliasing_is_a_failure(manifest: Manifest) -> None:
    """A backend whose views copy (no shared storage) fails the view check."""
    case = prepare(get_case("views/view_shares_storage/check/-/-"), manifest)
    observed = dict(case.run_on("cpu"))  # type: ignore[call-overload]
    observed["slice_same_storage"] = False
    verdict = case.judge(case.reference(), observed)
    assert not verdict.ok and "slice_same_storage" in (verdict.mismatch or "")


def test_reviewed_references_do_not_use_cpu(manifest: Manifest) -> None:
    """A reviewed case's expectation is hand-written: it exists without running CPU."""
    reviewed = [c for c in all_hand_cases().values()
                if c.source is ExpectedSource.REVIEWED_REFERENCE]  # fmt: skip
    assert reviewed and all(c.expected is not None for c in reviewed)
    case = prepare(get_case("reviewed/division_signs/check/-/-"), manifest)
    wrong = dict(case.run_on("cpu"))  # type: ignore[call-overload]
    wrong["remainder"] = wrong["fmod"]
    assert not case.judge(case.reference(), wrong).ok


def test_uninitialised_outputs_compare_metadata_only(manifest: Manifest) -> None:
    """empty(): values differ run to run, so only metadata is judged."""
    case = prepare(get_case("factories/empty_metadata/check/float32/-"), manifest)
    assert case.spec.expected_source is ExpectedSource.LEGAL_OUTPUT
    observed = case.run_on("cpu")
    assert case.judge(case.reference(), observed).ok


def test_hand_case_ids_are_valid_and_stable() -> None:
    """Hand case ids follow suite/name/check/dtype/- and are unique."""
    ids = list(all_hand_cases())
    assert len(ids) == len(set(ids))
    assert all(cid.split("/")[2] == "check" for cid in ids)
