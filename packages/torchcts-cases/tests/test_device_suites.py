"""The memory and device_api suites on the CPU: what manifests/cpu.py claims passes,
what it leaves out is missing from torch.cpu (its stated reason), the manifest's
limits reach the checks, and broken properties fail naming the numbers seen."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from torchcts_cases import get_case, prepare
from torchcts_cases.suites import all_hand_cases
from torchcts_cases.suites.limits import RunLimits, limits_of, run_limits
from torchcts_cases.suites.memory import LARGE_NUMEL, MIB, large_tensor
from torchcts_isolate import memory_limit
from torchcts_schema import CAPABILITY_NAMES, Manifest, load_manifest

REPO = Path(__file__).resolve().parents[3]
SUITES = ("memory", "device_api")
MakeManifest = Callable[..., Manifest]
RunRepros = Callable[[Manifest, Sequence[str]], list[str]]  # conftest.run_repros
CPU_CASES = sorted(
    cid
    for cid, c in all_hand_cases().items()
    if c.suite in SUITES and not c.needs_other_device and c.min_devices == 1
)


def _cpu_claims() -> tuple[str, ...]:
    return load_manifest(REPO / "manifests" / "cpu.py").capabilities


@pytest.fixture
def manifest(make_manifest: MakeManifest) -> Manifest:
    """A CPU manifest claiming every capability, with a 4 GiB memory limit."""
    return make_manifest(
        CAPABILITIES=list(CAPABILITY_NAMES), RESOURCE_LIMITS={"memory_mb": 4096}
    )


def _judge(case_id: str, manifest: Manifest) -> Any:
    case = prepare(get_case(case_id), manifest)
    with memory_limit(4096):  # the runner's cap on the device run
        observed = case.run_on("cpu")
    return case.judge(case.reference(), observed)


@pytest.mark.parametrize("case_id", CPU_CASES)
def test_cpu_validation_of_the_device_suites(case_id: str, manifest: Manifest) -> None:
    """A case manifests/cpu.py claims passes on CPU; one it leaves out fails there
    the way its comment says (a function torch.cpu lacks, or the CPU allocator's
    plain RuntimeError instead of torch.OutOfMemoryError)."""
    case = all_hand_cases()[case_id]
    if case.level >= 7:
        pytest.skip("level 7 (2 GiB, ~20 s on CPU): run in the documented validation")
    if case.capability in _cpu_claims():
        verdict = _judge(case_id, manifest)
        assert verdict.ok, verdict.mismatch
    elif case.capability == "oom":
        mismatch = _judge(case_id, manifest).mismatch or ""
        assert "raised RuntimeError, not torch.OutOfMemoryError: [enforce" in mismatch
    else:
        with pytest.raises(NotImplementedError, match=r"torch\.cpu\.\w+.* is missing"):
            _judge(case_id, manifest)


def test_limits_reach_the_check(make_manifest: MakeManifest) -> None:
    """DEVICE_COUNT and memory_mb are what the check sees in both runs, and the
    defaults outside them; a small memory_mb shrinks the large tensor."""
    m = make_manifest(DEVICE_COUNT=2, RESOURCE_LIMITS={"memory_mb": 64})
    assert RunLimits.of(m) == RunLimits(2, 64)
    assert run_limits() == RunLimits(1, None)
    with limits_of(RunLimits.of(m)):
        observed = large_tensor.check("cpu", None)
    assert observed["numel"] == 64 * MIB // 16 < LARGE_NUMEL


def test_out_of_memory_refuses_without_a_limit(make_manifest: MakeManifest) -> None:
    """No total_memory and no memory_mb: the case says what to declare instead of
    filling memory to find the limit."""
    case = prepare(get_case("memory/out_of_memory/check/-/-"), make_manifest())
    with pytest.raises(RuntimeError, match="set memory_mb or leave oom out"):
        case.run_on("cpu")


def test_broken_statistics_fail_with_the_numbers(
    manifest: Manifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device module whose memory_allocated never falls fails counts_free, and
    one whose peak ignores allocations fails peak_keeps_freed, each with numbers."""
    live = {"bytes": 0}

    def allocated(device: object = None) -> int:
        return live["bytes"]

    real_empty = torch.empty

    def counting_empty(*size: Any, **kwargs: Any) -> torch.Tensor:
        out = real_empty(*size, **kwargs)
        live["bytes"] += out.untyped_storage().nbytes()  # never decremented
        return out

    for name, fn in {
        "memory_allocated": allocated,
        "max_memory_allocated": lambda device=None: 0,
        "reset_peak_memory_stats": lambda device=None: None,
    }.items():
        monkeypatch.setattr(torch.cpu, name, fn, raising=False)
    monkeypatch.setattr(torch, "empty", counting_empty)
    mismatch = _judge("memory/memory_allocated_tracks/check/-/-", manifest).mismatch
    assert mismatch == (
        "memory_allocated_tracks.counts_free: expected bool True, got str "
        "'memory_allocated still 4194304 above its start after the 4194304-byte "
        "tensor was freed; expected <= 0'"
    )
    mismatch = _judge("memory/peak_and_reset/check/-/-", manifest).mismatch or ""
    assert "max_memory_allocated 0 right after reset_peak_memory_stats" in mismatch


def test_repro_scripts_of_the_device_suites_run_standalone(
    tmp_path: Path, run_repros: RunRepros
) -> None:
    """A repro carries the limits and shared helpers as stand-ins: on CPU it imports
    torch only and does not reproduce."""
    (tmp_path / "m.py").write_text('DEVICE = "cpu"\nDEVICE_COUNT = 1\n')
    manifest = load_manifest(tmp_path / "m.py")
    ids = ["device_api/module_basics/check/-/-", "device_api/generator_state/check/-/-"]
    for source in run_repros(manifest, ids):
        assert "return RunLimits(1, None)" in source
