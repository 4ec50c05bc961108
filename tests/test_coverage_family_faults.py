"""The case families added to reach every backend-relevant overload each fail, under
a simdev fault rule confined to one overload, with status failed and a mismatch
naming the property that broke; the clean simdev passes the same cases.

Families: foreach out= (a list of outs), overloads writing several arguments (a
fused optimizer step), calls from a reviewed recipe (``_convolution``), RNG
overloads judged by their distribution, window and uninitialised factories' out=
forms, ``set_`` re-pointing storage, and the device-path hooks
(``convolution_overrideable``). None replays an OpInfo sample, so each case takes
well under a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torchcts_cases
from suite_faults_helpers import clean_simdev, simdev_record  # noqa: F401 (autouse)
from torchcts_schema import CaseRecord, Status


def _record(tmp_path: Path, case_id: str, rules: list[dict[str, Any]]) -> CaseRecord:
    """The record of one case on simdev with `rules` as its fault profile."""
    return simdev_record(tmp_path, case_id, rules, ("float32", "int64"))


# PyTorch's generic (CompositeExplicitAutograd) kernel serves most of these overloads
# on a backend without its own; a faulty kernel is one the backend registered, which
# `own_kernel` makes simdev do for the overload the rule names
OWN = {"own_kernel": True}
# (case, fault rule, how its mismatch starts, a case of a sibling overload that the
# rule does not reach)
FAMILIES = [
    pytest.param(
        "aten/_foreach_add.List_out/out/float32/0",
        {"op": "aten::_foreach_add.List_out", "fault": "wrong_values", **OWN},
        "_foreach_add.List_out.out= result[0][",
        "aten/_foreach_add.Scalar_out/out/float32/0",
        id="foreach-out",
    ),
    pytest.param(
        "aten/_fused_adam_/writes/float32/0",
        {"op": "aten::_fused_adam_", "fault": "drop_inplace"},
        "_fused_adam_.writes: argument ",
        "aten/_fused_adamw_/writes/float32/0",
        id="fused-step-writes",
    ),
    pytest.param(
        "aten/_convolution/call/float32/0",
        {"op": "aten::_convolution", "fault": "wrong_values", **OWN},
        "_convolution.result: Tensor-likes are not close",
        "aten/_convolution.out/out_dtype/float32/0",
        id="recipe",
    ),
    pytest.param(
        "rng/out_draws/check/float32/-",
        {
            "op": "aten::uniform.out",
            "fault": "wrong_values",
            "magnitude": "large",
            **OWN,
        },
        "out_draws.uniform.",
        "rng/functional_draws/check/float32/-",
        id="rng-out",
    ),
    pytest.param(
        "factories/window_outs/check/float32/-",
        {"op": "aten::hann_window.periodic_out", "fault": "wrong_values", **OWN},
        "window_outs.hann_window.periodic_out[",
        "factories/windows/check/float32/-",
        id="window-out",
    ),
    pytest.param(
        "factories/empty_outs/check/float32/-",
        {"op": "aten::empty_permuted.out", "fault": "wrong_shape", **OWN},
        "empty_outs.empty_permuted.out: ",
        "factories/empty_metadata/check/float32/-",
        id="uninitialised-out",
    ),
    pytest.param(
        "mutation/set_inplace/check/float32/-",
        {"op": "aten::set_.source_Tensor", "fault": "break_alias"},
        "set_inplace.source_Tensor shares storage: ",
        "mutation/set_functional/check/float32/-",
        id="set-storage",
    ),
    pytest.param(
        "copies/convolution_hooks/check/float32/-",
        {"op": "aten::convolution_overrideable", "fault": "wrong_values"},
        "convolution_hooks.convolution_overrideable",
        "copies/copy_from_hooks/check/float32/-",
        id="device-hook",
    ),
    pytest.param(
        "copies/fused_attention_hooks/check/float32/-",
        {
            "op": "aten::_scaled_dot_product_fused_attention_overrideable_backward",
            "fault": "wrong_values",
        },
        "fused_attention_hooks.gradients[0]: Tensor-likes are not close",
        "copies/convolution_hooks/check/float32/-",
        id="device-hook-backward",
    ),
]


@pytest.mark.parametrize(("case_id", "rule", "starts", "sibling"), FAMILIES)
def test_a_fault_on_one_overload_fails_its_family_case_naming_the_property(
    tmp_path: Path, case_id: str, rule: dict[str, Any], starts: str, sibling: str
) -> None:
    """The rule's overload fails its case with a mismatch naming what broke; the
    same case passes on the clean simdev, and so does a case the rule cannot
    reach."""
    record = _record(tmp_path, case_id, [rule])
    assert record.status is Status.FAILED, record.exception_message
    assert record.mismatch is not None
    assert record.mismatch.startswith(starts), record.mismatch
    assert rule["op"] in torchcts_cases.get_case(case_id).surfaces
    clean = _record(tmp_path, case_id, [])
    assert clean.status is Status.PASSED, clean.mismatch or clean.detail
    other = _record(tmp_path, sibling, [rule])
    assert other.status is Status.PASSED, other.mismatch or other.detail
