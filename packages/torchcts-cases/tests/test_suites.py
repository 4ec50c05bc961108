"""Hand-written suites: every check passes on CPU, broken properties are caught, and
unclaimed capabilities are not_run with their reason."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from torchcts_cases import Selection, get_case, prepare, select_cases, tolerance_for
from torchcts_cases.suites import all_hand_cases
from torchcts_schema import (
    CAPABILITY_NAMES,
    FEATURE_CAPABILITIES,
    SUITE_CAPABILITIES,
    ExpectedSource,
    Manifest,
    NotRunReason,
)

ALL_CAPS = list(CAPABILITY_NAMES)
MakeManifest = Callable[..., Manifest]
# paths torch.cpu does not offer (manifests/cpu.py leaves them out, saying why): a
# missing device-module function is unsupported there, so they are judged on devices
NOT_ON_CPU = {"memory_stats", "oom", "device_properties", "streams", "events"}
RUNNABLE_ON_CPU = sorted(
    cid
    for cid, c in all_hand_cases().items()
    if not c.needs_other_device
    and c.min_devices == 1
    and c.level < 7
    and c.capability not in NOT_ON_CPU
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


def test_every_feature_capability_has_cases() -> None:
    """Each feature capability (foreach, fused, autocast, ...) gates at least one case."""
    caps = {c.capability for c in all_hand_cases().values()}
    assert set(FEATURE_CAPABILITIES) <= caps


def test_unclaimed_feature_is_not_run_with_its_reason(
    make_manifest: MakeManifest,
) -> None:
    """Without pin_memory and float64 claimed: pinning is not_run (capability) and
    gradcheck runs in float32 only, float64 being not_run (dtype)."""
    caps = [c for c in ALL_CAPS if c != "pin_memory"]
    m = make_manifest(
        DEVICE="simdev",
        CAPABILITIES=caps,
        DTYPES={"float32": True, "float64": False},
    )
    selected = select_cases(m, Selection(level=8, suites=("training", "autograd")))
    reasons = {r.case_id: (r.not_run_reason, r.detail) for r in selected.not_run}
    assert reasons["training/dataloader_pin_memory/check/-/-"] == (
        NotRunReason.CAPABILITY_NOT_DECLARED,
        "capability pin_memory not in CAPABILITIES",
    )
    assert reasons["autograd/gradcheck/check/float64/-"][0] is (
        NotRunReason.DTYPE_NOT_SUPPORTED
    )
    runnable = {s.case_id for s in selected.runnable}
    assert "autograd/gradcheck/check/float32/-" in runnable


def test_documented_case_tolerance_sits_below_the_manifest() -> None:
    """A case's documented tolerance replaces the default; the manifest still wins."""
    documented = {"float32": (1e-4, 1e-4)}
    assert tolerance_for("float32", "x", {}, documented=documented) == (1e-4, 1e-4)
    manifest = {"ops": {"x": {"float32": {"atol": 1e-3, "rtol": 1e-3}}}}
    assert tolerance_for("float32", "x", manifest, documented=documented) == (
        1e-3,
        1e-3,
    )
    assert tolerance_for("float32", "x") == (1e-5, 1.3e-5)


def test_training_steps_outside_the_documented_tolerance_fail(
    manifest: Manifest,
) -> None:
    """Weights 1e-3 off after the steps fail sgd_steps, naming the parameter."""
    case = prepare(get_case("training/sgd_steps/check/-/-"), manifest)
    observed = case.run_on("cpu")
    assert isinstance(observed, dict)
    observed["sgd"]["params"]["0.bias"] = observed["sgd"]["params"]["0.bias"] + 1e-3
    mismatch = case.judge(case.reference(), observed).mismatch or ""
    assert mismatch.startswith(
        "sgd_steps.sgd.params.0.bias: Tensor-likes are not close"
    )


def test_documented_case_tolerance_is_recorded_as_its_own_source() -> None:
    """A result judged with a case's documented tolerance says so, not "default"."""
    from torchcts_cases.tolerances import resolve_tolerance
    from torchcts_schema import ToleranceSource

    used = resolve_tolerance("float32", "x", {}, documented={"float32": (1e-4, 1e-4)})
    assert used.source is ToleranceSource.CASE_DOCUMENTED
    assert (used.atol, used.rtol) == (1e-4, 1e-4)


def test_repro_of_a_documented_tolerance_case_judges_with_it(
    manifest: Manifest,
) -> None:
    """The tolerance a hand case reports (and writes into its repro script) is its
    documented one, as the judgement used, not the default table's."""
    case = prepare(get_case("training/sgd_steps/check/-/-"), manifest)
    assert case.tolerance("float32") == (1e-4, 1e-4)
    script = case.repro_source("cpu", None, {})
    assert '"float32": [0.0001, 0.0001]' in script


@pytest.mark.parametrize("readme", ["packages/torchcts-cases/README.md", "README.md"])
def test_readme_area_table_counts_the_cases(readme: str) -> None:
    """The areas table's per-level counts are the hand-written cases' counts: a suite
    or a case added without its row is noticed (the opinfo row is checked by
    tests/test_area_table.py, which needs the whole index)."""
    from collections import Counter
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / readme
    if not path.exists():
        pytest.skip(f"{readme} is not in this checkout")
    counts = Counter((c.suite, c.level) for c in all_hand_cases().values())
    table: dict[str, list[int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 12 and cells[-1].isdigit():
            table[cells[0]] = [int(cell) for cell in cells[3:]]
    suites = {suite for suite, _ in counts}
    assert set(table) == suites | {"opinfo"}
    for suite in suites:
        per_level = [counts[(suite, level)] for level in range(1, 9)]
        total = sum(n for (s, _), n in counts.items() if s == suite)
        assert table[suite] == [*per_level, total], suite
