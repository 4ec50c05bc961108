"""simdev faults in the dtypes suite's territory fail the right case, with a mismatch
naming what broke; the clean simdev passes every case its manifest claims.

A fault is one simdev rule on the overload a real backend would get wrong: the
device's float64 -> float8 cast (`aten::_to_copy` from float64: one float8 step off,
the error of a wrong rounding mode), its complex conjugation (`conj_physical.out`),
its uint64 sort. The expectation is the CPU run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from suite_faults_helpers import clean_simdev, simdev_manifest, simdev_mismatch  # noqa: F401 (autouse)
from torchcts_cases import get_case, prepare
from torchcts_cases.suites import all_hand_cases
from torchcts_schema import Manifest

DTYPES = ("complex64", "complex128", "uint16", "uint32", "uint64")
DTYPES += ("float8_e4m3fn", "float8_e5m2")
# simdev's manifest leaves "quantized" out: a Python backend cannot make quantized
# tensors (test_quantized_tensors_cannot_be_made_on_simdev)
NOT_ON_SIMDEV = {
    "dtypes/quantize_per_tensor/check/-/-",
    "dtypes/quantized_tensors/check/-/-",
}


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    """A simdev manifest claiming every capability and the suite's dtypes."""
    return simdev_manifest(tmp_path, ("float32", *DTYPES))


CLEAN_CASES = sorted(
    cid
    for cid, c in all_hand_cases().items()
    if c.suite == "dtypes" and cid not in NOT_ON_SIMDEV
)


@pytest.mark.parametrize("case_id", CLEAN_CASES)
def test_clean_simdev_passes_the_dtypes_suite(case_id: str, manifest: Manifest) -> None:
    """Without faults simdev computes with the CPU's kernels: every case passes."""
    case = prepare(get_case(case_id), manifest)
    verdict = case.judge(case.reference(), case.run_on("simdev"))
    assert verdict.ok, verdict.mismatch


@pytest.mark.parametrize(
    ("dtype", "difference"),
    [
        ("float8_e4m3fn", "32.0 at index (14,)"),
        ("float8_e5m2", "8192.0 at index (19,)"),
    ],
)
def test_wrong_float8_rounding_fails_float8_casts(
    manifest: Manifest, dtype: str, difference: str
) -> None:
    """A float64 -> float8 cast one step off fails float8_casts at from_float64 (its
    float32 casts, judged first, pass): 448 became 416 in e4m3fn, 57344 49152 in
    e5m2."""
    found = simdev_mismatch(
        f"dtypes/float8_casts/check/{dtype}/-",
        manifest,
        {"op": "aten::_to_copy", "dtype": "float64", "fault": "wrong_values"},
    )
    assert found.startswith("float8_casts.from_float64.values: Tensor-likes are not")
    assert f"Greatest absolute difference: {difference}" in found


def test_wrong_conj_fails_complex_conj(manifest: Manifest) -> None:
    """A wrong conj_physical fails complex_conj there; the lazy conjugate and its
    resolution (another path: the conj bit and copy_) pass before it."""
    found = simdev_mismatch(
        "dtypes/complex_conj/check/complex128/-",
        manifest,
        {
            "op": "aten::conj_physical.out",
            "fault": "wrong_values",
            "magnitude": "large",
        },
    )
    assert found.startswith("complex_conj.conj_physical.values: Tensor-likes are not")
    assert "Greatest absolute difference: 4.04" in found


def test_wrong_uint64_sort_fails_unsigned_compare(manifest: Manifest) -> None:
    """A wrong uint64 sort fails unsigned_compare at the sorted values, off by one."""
    found = simdev_mismatch(
        "dtypes/unsigned_compare/check/uint64/-",
        manifest,
        {"op": "aten::sort.values_stable", "dtype": "uint64", "fault": "wrong_values"},
    )
    assert found.startswith("unsigned_compare.sort[0]: Tensor-likes are not equal")
    assert "Greatest absolute difference: 1 at index (0,)" in found


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_quantized_tensors_cannot_be_made_on_simdev() -> None:
    """The reason simdev's manifest leaves quantized out: its quantize_per_tensor
    returns a plain tensor labelled quint8 (no quantizer), and a CPU quantized
    tensor cannot move to it."""
    x = torch.tensor([0.25, 1.0]).to("simdev")
    q = torch.quantize_per_tensor(x, 0.5, 3, torch.quint8)
    assert q.dtype == torch.quint8 and not q.is_quantized
    with pytest.raises(RuntimeError, match="UnknownQuantizer"):
        q.q_scale()
    host = torch.quantize_per_tensor(torch.tensor([0.25]), 0.5, 3, torch.quint8)
    with pytest.raises(NotImplementedError, match="Quantizedsimdev"):
        host.to("simdev")
