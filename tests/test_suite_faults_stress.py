"""simdev faults in the stress suite's territory fail the right case, with a mismatch
naming what broke; the clean simdev passes every stress case.

Each fault is one simdev rule narrowed to the edge a real backend gets wrong: a matmul
or a reduction only when its input has no elements, an elementwise kernel only at rank
20, a reduction only when its input is expanded (stride 0), a kernel only past a
million elements, and one transcendental op off by ten times the default tolerance in
a 300-op chain. The expectation is the CPU run of the same check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_faults_helpers import clean_simdev, simdev_manifest, simdev_mismatch  # noqa: F401 (autouse)
from torchcts_cases import get_case, prepare
from torchcts_cases.suites import all_hand_cases
from torchcts_schema import Manifest

STRESS_CASES = sorted(cid for cid, c in all_hand_cases().items() if c.suite == "stress")


@pytest.fixture
def manifest(tmp_path: Path) -> Manifest:
    """A simdev manifest claiming every capability, with no memory_mb (the large
    case's tensor is then 64 MiB)."""
    return simdev_manifest(tmp_path, ("float32", "float64"))


@pytest.mark.parametrize("case_id", STRESS_CASES)
def test_clean_simdev_passes_the_stress_suite(case_id: str, manifest: Manifest) -> None:
    """Without faults simdev computes with the CPU's kernels: every case passes."""
    case = prepare(get_case(case_id), manifest)
    verdict = case.judge(case.reference(), case.run_on("simdev"))
    assert verdict.ok, verdict.mismatch


def test_uninitialised_empty_inner_matmul_fails_zero_size_matmul(
    manifest: Manifest,
) -> None:
    """A matmul whose inner dimension is empty must be all zeros: one that leaves
    its output off fails at that product, and not at the empty-rows product before
    it (whose output has no elements to be wrong)."""
    found = simdev_mismatch(
        "stress/zero_size_matmul_cat/check/-/-",
        manifest,
        {"op": "aten::mm*", "max_numel": 0, "fault": "wrong_values"},
    )
    assert found.startswith(
        "zero_size_matmul_cat.mm_empty_inner: Tensor-likes are not close"
    )
    assert "Mismatched elements: 12 / 12" in found


def test_wrong_sum_of_an_empty_tensor_fails_zero_size_reductions(
    manifest: Manifest,
) -> None:
    """A sum over no elements that does not start from 0 fails the first sum."""
    found = simdev_mismatch(
        "stress/zero_size_reductions/check/-/-",
        manifest,
        {"op": "aten::sum*", "max_numel": 0, "fault": "wrong_values"},
    )
    assert found.startswith("zero_size_reductions.sum: Scalars are not close")


def test_elementwise_wrong_only_at_rank_20_fails_that_rank(manifest: Manifest) -> None:
    """A mul kernel wrong only for rank-20 inputs (an index calculator with too few
    dims) passes ranks 8, 10 and 12 and fails rank 20's first product."""
    found = simdev_mismatch(
        "stress/high_rank_elementwise/check/-/-",
        manifest,
        {"op": "aten::mul*", "ndim": 20, "fault": "wrong_values"},
    )
    assert found.startswith(
        "high_rank_elementwise.rank_20.affine: Tensor-likes are not close"
    )


def test_reduction_reading_expanded_input_as_dense_fails_expanded_strides(
    manifest: Manifest,
) -> None:
    """A sum wrong only when its input has a stride-0 dim fails the expanded case at
    its first sum; the clone and contiguous copies before it pass."""
    found = simdev_mismatch(
        "stress/expanded_strides/check/-/-",
        manifest,
        {"op": "aten::sum*", "expanded": True, "fault": "wrong_values"},
    )
    assert found.startswith("expanded_strides.sums[0]: Tensor-likes are not close")


def test_wrong_kernel_past_a_million_elements_fails_large_numel(
    manifest: Manifest,
) -> None:
    """An in-place add wrong only on inputs of 2**20 elements or more (a 32-bit
    index past its range, on a real device) fails the large tensor's maximum: 25
    where every element was computed right gives 20."""
    found = simdev_mismatch(
        "stress/large_numel/check/-/-",
        manifest,
        {
            "op": "aten::add.out",
            "inplace": True,
            "min_numel": 2**20,
            "fault": "wrong_values",
        },
    )
    assert found.startswith("large_numel.amax: Scalars are not equal")
    assert "Expected 20 but got 25" in found


def test_wrong_op_deep_in_the_float_chain_fails_its_first_checkpoint(
    manifest: Manifest,
) -> None:
    """A wrong atan (run every 15th op of 300) fails the float32 chain at its first
    checkpoint, under the chain's documented 1e-4 tolerance."""
    found = simdev_mismatch(
        "stress/long_op_chain/check/-/-",
        manifest,
        {"op": "aten::atan*", "fault": "wrong_values", "magnitude": "large"},
    )
    assert found.startswith("long_op_chain.float32.after_050: Tensor-likes are not")


def test_off_by_one_int_op_fails_the_exact_int_chain(manifest: Manifest) -> None:
    """An xor off by one fails the int64 chain (compared exactly) at its first
    checkpoint, while the float32 chain, which has no xor, passes."""
    found = simdev_mismatch(
        "stress/long_op_chain/check/-/-",
        manifest,
        {"op": "aten::bitwise_xor*", "dtype": "int64", "fault": "wrong_values"},
    )
    assert found.startswith("long_op_chain.int64.after_050: Tensor-likes are not")
