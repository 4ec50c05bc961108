"""The stress suite: every case passes CPU validation, an error agrees only with the
same exception type, the large tensor is sized from the manifest's memory_mb, the
long chain is judged with its documented tolerance, and its repro carries the
manifest's limits.

simdev faults in the suite's territory are in the top-level
tests/test_suite_faults_stress.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torchcts_cases import Selection, get_case, prepare, select_cases
from torchcts_cases.suites import all_hand_cases
from torchcts_cases.suites.limits import RunLimits, limits_of
from torchcts_cases.suites.stress_scale import large_numel_size
from torchcts_schema import CAPABILITY_NAMES, ExpectedSource, Manifest, NotRunReason

MakeManifest = Callable[..., Manifest]
STRESS = sorted(cid for cid, c in all_hand_cases().items() if c.suite == "stress")


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """A CPU manifest claiming every capability, without a memory_mb."""
    return make_manifest(CAPABILITIES=list(CAPABILITY_NAMES))


def _observed(case_id: str, manifest: Manifest) -> tuple[Any, dict[str, Any]]:
    case = prepare(get_case(case_id), manifest)
    observed = case.run_on("cpu")
    assert isinstance(observed, dict)
    return case, observed


@pytest.mark.parametrize("case_id", STRESS)
def test_stress_case_passes_cpu_validation(case_id: str, manifest: Manifest) -> None:
    """Validation: each stress check run on CPU matches its CPU expectation."""
    case = prepare(get_case(case_id), manifest)
    verdict = case.judge(case.reference(), case.run_on("cpu"))
    assert verdict.ok, verdict.mismatch


def test_suite_levels_sources_and_capability() -> None:
    """Eleven cases at level 7, the large tensor at 8, all behind "stress"; each
    names its expected source (the allocation case is a property)."""
    cases = [all_hand_cases()[cid] for cid in STRESS]
    assert len(cases) == 11 and {c.capability for c in cases} == {"stress"}
    assert {c.name for c in cases if c.level == 8} == {"large_numel"}
    assert all(c.level in (7, 8) for c in cases)
    sources = {c.name: c.source for c in cases}
    assert sources.pop("many_small_allocations") is ExpectedSource.PROPERTY
    assert set(sources.values()) == {ExpectedSource.CPU_REFERENCE}


def test_unclaimed_stress_is_not_run(make_manifest: MakeManifest) -> None:
    """Without "stress" every case is not_run: capability_not_declared."""
    caps = [c for c in CAPABILITY_NAMES if c != "stress"]
    selected = select_cases(
        make_manifest(CAPABILITIES=caps), Selection(level=8, suites=("stress",))
    )
    assert not selected.runnable
    reasons = {r.not_run_reason for r in selected.not_run if r.case_id in STRESS}
    assert reasons == {NotRunReason.CAPABILITY_NOT_DECLARED}


def test_large_tensor_is_a_sixteenth_of_memory_mb(make_manifest: MakeManifest) -> None:
    """1/16 of memory_mb in whole 4096-element rows, 64 MiB without one; the CPU
    reference and the device run both see the manifest's value."""
    with limits_of(RunLimits(memory_mb=160)):
        assert large_numel_size() == 10 * 2**20
    with limits_of(RunLimits(memory_mb=1)):
        assert large_numel_size() == 2**16  # 16 whole rows
    assert large_numel_size() == 64 * 2**20
    small = make_manifest(CAPABILITIES=["stress"], RESOURCE_LIMITS={"memory_mb": 32})
    case = prepare(get_case("stress/large_numel/check/-/-"), small)
    expected = case.reference()
    assert isinstance(expected, dict) and expected["numel"] == 2 * 2**20
    assert case.run_on("cpu")["numel"] == 2 * 2**20  # type: ignore[index]


def test_large_tensor_observations_are_small(manifest: Manifest) -> None:
    """The large case returns spot values and reductions, never the tensor: what
    comes back is under 1/256 of its size."""
    _, observed = _observed("stress/large_numel/check/-/-", manifest)
    returned = sum(
        v.numel() * v.element_size()
        for v in observed.values()
        if isinstance(v, torch.Tensor)
    )
    assert observed["numel"] == 64 * 2**20
    assert returned * 256 < observed["numel"]
    assert observed["argmax"].item() == observed["numel"] - 4096  # first of the max


def test_an_error_agrees_only_with_the_same_exception_type(manifest: Manifest) -> None:
    """amax over an empty dim raises IndexError on CPU: a device that returns a
    value, or raises RuntimeError instead, fails naming the reduction."""
    case, observed = _observed("stress/zero_size_reductions/check/-/-", manifest)
    expected = case.reference()
    assert expected["amax_dim0"] == "raises IndexError"  # type: ignore[index]
    assert case.judge(expected, observed).ok
    observed["amax_dim0"] = torch.zeros(5)
    returned = case.judge(expected, observed).mismatch or ""
    assert returned.startswith(
        "zero_size_reductions.amax_dim0: expected str 'raises IndexError', got Tensor"
    )
    observed["amax_dim0"] = "raises RuntimeError"
    other = case.judge(expected, observed).mismatch or ""
    assert other == (
        "zero_size_reductions.amax_dim0: expected 'raises IndexError', "
        "got 'raises RuntimeError'"
    )


def test_chain_is_judged_with_its_documented_tolerance(manifest: Manifest) -> None:
    """The float32 chain passes 5e-5 off (within 1e-4) and fails 3e-4 off, naming
    the checkpoint; the int64 chain is exact: off by one fails."""
    case, observed = _observed("stress/long_op_chain/check/-/-", manifest)
    expected = case.reference()
    chain = observed["float32"]
    chain["after_300"] = chain["after_300"] + 5e-5
    assert case.judge(expected, observed).ok
    chain["after_300"] = chain["after_300"] + 2.5e-4
    mismatch = case.judge(expected, observed).mismatch or ""
    assert mismatch.startswith("long_op_chain.float32.after_300: Tensor-likes are not")
    assert "(up to 0.0001 allowed)" in mismatch
    chain["after_300"] = expected["float32"]["after_300"]  # type: ignore[index]
    observed["int64"]["after_150"] = observed["int64"]["after_150"] + 1
    mismatch = case.judge(expected, observed).mismatch or ""
    assert mismatch.startswith("long_op_chain.int64.after_150: Tensor-likes are not")


def test_repro_carries_the_manifest_limits(
    make_manifest: MakeManifest, capsys: pytest.CaptureFixture[str]
) -> None:
    """The large case's repro sizes its tensor from the manifest's memory_mb, as the
    case did, needs no TorchCTS import, and runs to "did not reproduce" on CPU."""
    small = make_manifest(CAPABILITIES=["stress"], RESOURCE_LIMITS={"memory_mb": 16})
    case = prepare(get_case("stress/large_numel/check/-/-"), small)
    source = case.repro_source("cpu", None, {})
    assert "return RunLimits(1, 16)" in source
    assert "torchcts" not in source.replace(f"TorchCTS case {case.spec.case_id}", "")
    namespace: dict[str, object] = {"__name__": "repro"}
    exec(compile(source, "repro.py", "exec"), namespace)  # exits 1 on a mismatch
    assert "the failure did not reproduce" in capsys.readouterr().out
    run = namespace["run"]
    assert callable(run) and run("cpu")["numel"] == 2**20
