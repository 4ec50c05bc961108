"""simdev faults confined to one aten overload fail the generated case of that
overload (suite ``aten``) with status failed and a mismatch naming the property that
broke: out= results, in-place storage, backward results; the clean simdev passes the
same cases, and the sibling case the rule does not reach passes under it.

Each case runs end to end through the runner's `execute_case` (backend import and
fault profile from the manifest, CPU reference, device run, judgement, record). The
first case replays an OpInfo sample, so it pays the OpInfo import once (about 11 s on
an idle machine); the others take well under a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torchcts_cases
from suite_faults_helpers import clean_simdev, simdev_record  # noqa: F401 (autouse)
from torchcts_cases.catalog import overload_entry
from torchcts_schema import CaseRecord, Status


def _record(tmp_path: Path, case_id: str, rules: list[dict[str, Any]]) -> CaseRecord:
    """The record of one case on simdev with `rules` as its fault profile."""
    return simdev_record(tmp_path, case_id, rules, ("float32",))


OUT_CASE = "aten/index_select.out/out/float32/0"
INPLACE_CASE = "aten/index_fill_.int_Scalar/inplace/float32/0"
BACKWARD_CASE = "aten/native_layer_norm_backward/backward/float32/0"


@pytest.mark.parametrize(
    "case_id",
    [
        OUT_CASE,
        "aten/index_select.out/out_resize/float32/0",
        "aten/index_select.out/out_dtype/float32/0",
        INPLACE_CASE,
        BACKWARD_CASE,
        "aten/add.Scalar/call/float32/0",
    ],
)
def test_clean_simdev_passes(tmp_path: Path, case_id: str) -> None:
    """Without faults simdev computes with the CPU's kernels: the case passes."""
    record = _record(tmp_path, case_id, [])
    assert record.status is Status.PASSED, record.mismatch or record.detail


def test_a_dropped_out_write_fails_the_out_case_only(tmp_path: Path) -> None:
    """index_select.out that never writes its out tensor fails the out= case,
    naming out= (values); the functional index_select, another overload, passes."""
    rule = {"op": "aten::index_select.out", "fault": "drop_inplace"}
    record = _record(tmp_path, OUT_CASE, [rule])
    assert record.status is Status.FAILED
    assert record.mismatch is not None
    assert record.mismatch.startswith("index_select.out.out= result[0]: ")
    assert torchcts_cases.get_case(OUT_CASE).surfaces == ("aten::index_select.out",)
    sibling = _record(tmp_path, "aten/index_select/call/float32/0", [rule])
    assert sibling.status is Status.PASSED, sibling.mismatch


def test_wrong_resize_values_fail_the_resize_case(tmp_path: Path) -> None:
    """Wrong values written by index_select.out fail its resize case, naming the
    empty out that was resized."""
    rule = {"op": "aten::index_select.out", "fault": "wrong_values"}
    record = _record(tmp_path, "aten/index_select.out/out_resize/float32/0", [rule])
    assert record.status is Status.FAILED
    assert record.mismatch is not None
    assert record.mismatch.startswith("index_select.out.out= resizes an empty out[0]: ")
    assert "are not close" in record.mismatch


def test_a_dropped_inplace_write_fails_the_storage_property(tmp_path: Path) -> None:
    """index_fill_ that computes into a scratch copy leaves self unwritten: the
    in-place case fails at the storage written."""
    rule = {"op": "aten::index_fill_.int_Scalar", "fault": "drop_inplace"}
    record = _record(tmp_path, INPLACE_CASE, [rule])
    assert record.status is Status.FAILED
    assert record.mismatch is not None
    assert record.mismatch.startswith(
        "index_fill_.int_Scalar.in-place storage written: "
    )
    assert "are not close" in record.mismatch


def test_a_repointed_inplace_target_fails_the_storage_property(
    tmp_path: Path,
) -> None:
    """index_fill_ that re-points self at new storage (older views go stale) fails
    the in-place case at self's storage."""
    rule = {"op": "aten::index_fill_.int_Scalar", "fault": "break_alias"}
    record = _record(tmp_path, INPLACE_CASE, [rule])
    assert record.status is Status.FAILED
    assert record.mismatch == (
        "index_fill_.int_Scalar.in-place keeps self's storage: expected bool True, "
        "got str 'self was re-pointed at another storage'"
    )


def test_a_wrong_backward_kernel_fails_the_direct_backward_case(
    tmp_path: Path,
) -> None:
    """A wrong native_layer_norm_backward fails its direct call, naming the
    backward result, against the CPU's gradients for the same arguments."""
    rule = {"op": "aten::native_layer_norm_backward", "fault": "wrong_values"}
    record = _record(tmp_path, BACKWARD_CASE, [rule])
    assert record.status is Status.FAILED
    assert record.mismatch is not None
    assert record.mismatch.startswith(
        "native_layer_norm_backward.backward result[0]: Tensor-likes are not close"
    )


SCHEMA_OUT_CASE = "aten/_add_relu.out/out/float32/0"


def test_a_schema_built_out_case_fails_on_its_overload_only(tmp_path: Path) -> None:
    """_add_relu.out, which no OpInfo sample reaches, is judged on a call built from
    its schema (level 3): wrong values from that overload alone fail its out= case
    naming out=, while the functional _add_relu.Tensor passes under the same rule;
    clean simdev passes both."""
    spec = torchcts_cases.get_case(SCHEMA_OUT_CASE)
    assert overload_entry(spec)["donor"]["op"] == "<schema>"
    assert spec.level == 3
    rule = {"op": "aten::_add_relu.out", "fault": "wrong_values"}
    record = _record(tmp_path, SCHEMA_OUT_CASE, [rule])
    assert record.status is Status.FAILED
    assert record.mismatch is not None
    assert record.mismatch.startswith("_add_relu.out.out= result[0]: ")
    sibling = _record(tmp_path, "aten/_add_relu.Tensor/call/float32/0", [rule])
    assert sibling.status is Status.PASSED, sibling.mismatch
    clean = _record(tmp_path, SCHEMA_OUT_CASE, [])
    assert clean.status is Status.PASSED, clean.mismatch or clean.detail


def test_simdev_refuses_a_copy_on_write_clone(tmp_path: Path) -> None:
    """The schema-built _lazy_clone case errors on clean simdev: PyTorch's
    copy-on-write refuses a storage that points into a CPU payload (a documented
    Python-backend limitation, excluded in manifests/simdev.py); this pins it."""
    record = _record(tmp_path, "aten/_lazy_clone/call/float32/0", [])
    assert record.status is Status.ERROR
    assert "Expected storage != nullptr" in (record.exception_message or "")
