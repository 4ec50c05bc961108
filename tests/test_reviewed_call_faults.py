"""simdev runs of the OpInfo cases the level-4 long runs showed judged wrongly, end
to end through the runner's `execute_case` (its CPU-fallback watch included):

- an error input PyTorch's review calls a legal call (``clamp_max(t, 2)``) and an
  out= call whose outputs go by schema name (``_batch_norm_with_update.out``), once
  without a CPU reference (`torchcts_cases/tests/test_opinfo_reviewed_calls.py`);
- ``linalg.matrix_rank(out=)``, which PyTorch leaves unwritten whenever a dispatch
  mode is on (the watch is one): clean simdev failed it with garbage in out;
- ``narrow_copy``'s error inputs that OpInfo expects to raise another error off the
  CPU (the CPU's own kernel checks them first): clean simdev raised that other error
  and failed;
- ``linear_cross_entropy`` with ``acc_policy="auto"``, which PyTorch resolves per
  device type (float16 accumulated in float16 off the CPU and CUDA): clean simdev
  missed the CPU's float32-accumulated gradients by float16 rounding.

Clean simdev passes each; a wrong value on the overload each value case reaches fails
it, naming the output, so stepping the watch aside judges no less.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from suite_faults_helpers import clean_simdev, simdev_record  # noqa: F401 (autouse)
from torchcts_schema import CaseRecord, Status

LEGAL_ERROR_INPUT = "opinfo/clamp_max/error_inputs/-/0"
OUT_BY_NAME = "opinfo/_batch_norm_with_update/out/float32/0"
RANK_OUT = "opinfo/linalg.matrix_rank/out/float64/0"
DEVICE_ERROR = "opinfo/narrow_copy/error_inputs/-/1"
DEVICE_CHOICE = (
    "opinfo/nn.functional.linear_cross_entropy.chunked_none/backward/float16/4"
)


def _record(tmp_path: Path, case_id: str, rules: list[dict[str, Any]]) -> CaseRecord:
    """The record of one case on simdev with `rules` as its fault profile."""
    return simdev_record(tmp_path, case_id, rules, ("float32", "float64", "float16"))


@pytest.mark.parametrize(
    "case_id", [LEGAL_ERROR_INPUT, OUT_BY_NAME, RANK_OUT, DEVICE_ERROR, DEVICE_CHOICE]
)
def test_clean_simdev_passes(tmp_path: Path, case_id: str) -> None:
    """Without faults simdev computes with the CPU's kernels: each passes."""
    record = _record(tmp_path, case_id, [])
    assert record.status is Status.PASSED, record.mismatch or record.detail


def test_the_rank_case_says_the_watch_stepped_aside(tmp_path: Path) -> None:
    """The record names the upstream defect it ran around."""
    record = _record(tmp_path, RANK_OUT, [])
    assert "matrix-rank-out-under-mode" in (record.detail or "")


def test_the_choice_case_says_what_was_resolved(tmp_path: Path) -> None:
    """The record says the reference used the options PyTorch picks for simdev."""
    record = _record(tmp_path, DEVICE_CHOICE, [])
    assert "acc_policy='compact'" in (record.detail or ""), record.detail


@pytest.mark.parametrize(
    ("case_id", "rule"),
    [
        (LEGAL_ERROR_INPUT, {"op": "aten::clamp_max*", "dtype": "int64"}),
        (OUT_BY_NAME, {"op": "aten::_batch_norm_with_update.out"}),
        (RANK_OUT, {"op": "aten::sum.IntList_out"}),
        (DEVICE_CHOICE, {"op": "aten::mm*", "dtype": "float16"}),
    ],
)
def test_a_wrong_value_fails_the_case(
    tmp_path: Path, case_id: str, rule: dict[str, Any]
) -> None:
    """Wrong values on the overload the case reaches fail it at its output."""
    record = _record(tmp_path, case_id, [dict(rule, fault="wrong_values")])
    assert record.status is Status.FAILED, record.detail
    assert (record.mismatch or "").startswith("output"), record.mismatch
