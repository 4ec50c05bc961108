"""With the clean profile, simdev computes every OpInfo sample exactly as the CPU does.

Each op in PyTorch's ``op_db`` that supports float32 on CPU runs its first samples
(function variant) on CPU and on simdev, from identical inputs and seeds; outputs must
be bitwise equal in values, dtype, shape and strides, and exceptions must match in type.
The ops simdev cannot agree on are listed in the package README with the reason, and
pinned below so the list cannot go stale in either direction.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

import pytest
import torch
import torchcts_simdev  # noqa: F401 - registers the device
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._pytree import tree_flatten, tree_map

SAMPLES_PER_OP = 2

# simdev limitations (also in the README): sparse layouts have no storage to hold a
# payload, so a Python backend cannot represent them.
LIMITATIONS = {
    "to_sparse": "sparse layouts are not supported",
    "sparse.sampled_addmm": "sparse layouts are not supported",
    "sparse.mm/reduce": "sparse layouts are not supported",
}
# Samples whose meaning does not survive moving every input tensor to a device; they
# disagree on any device, so they say nothing about simdev.
NOT_SIMDEV = {
    "as_strided/partial_views": "the sample views memory outside the moved copy",
    "tensor_split": "its index tensor must stay on the CPU on every device",
}
# Outputs of uninitialised memory: only their metadata can agree.
METADATA_ONLY = {
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
    "new_empty_strided",
}  # fmt: skip


def _key(op: Any) -> str:
    return op.name + (f"/{op.variant_test_name}" if op.variant_test_name else "")


OPS = [
    op
    for op in op_db
    if torch.float32 in op.supported_dtypes("cpu") and _key(op) not in NOT_SIMDEV
]


def _to_device(value: Any) -> Any:
    """Move every tensor, and point every CPU device argument (factories) at simdev."""

    def move(item: Any) -> Any:
        if isinstance(item, torch.Tensor):
            return item.to("simdev")
        if (isinstance(item, torch.device) and item.type == "cpu") or item == "cpu":
            return torch.device("simdev")
        return item

    return tree_map(move, value)


def _outcome(op: Any, sample: Any, device: bool) -> Any:
    torch.manual_seed(0)
    args = (sample.input, sample.args, sample.kwargs)
    inp, rest, kwargs = _to_device(args) if device else args
    try:
        return op.op(inp, *rest, **kwargs)
    except Exception as exc:  # the exception type is part of the outcome
        return exc


def _compare(expected: Any, observed: Any, metadata_only: bool) -> None:
    if isinstance(expected, Exception):
        assert type(observed) is type(expected), (
            f"expected {expected!r}, got {observed!r}"
        )
        return
    assert not isinstance(observed, Exception), f"simdev raised {observed!r}"
    flat_expected, spec_expected = tree_flatten(expected)
    flat_observed, spec_observed = tree_flatten(observed)
    assert spec_expected == spec_observed
    for want, got in zip(flat_expected, flat_observed, strict=True):
        if not isinstance(want, torch.Tensor):
            assert want == got or (want != want and got != got)
            continue
        assert got.device.type == "simdev"
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        if want.numel() > 1:
            assert got.stride() == want.stride(), "strides differ"
        if not metadata_only:
            torch.testing.assert_close(
                got.cpu(), want, rtol=0, atol=0, equal_nan=True, check_device=False
            )


def _check(op: Any) -> None:
    torch.manual_seed(0)
    # islice: some ops build hundreds of samples; only the first are needed.
    samples = list(islice(op.sample_inputs("cpu", torch.float32), SAMPLES_PER_OP))
    assert samples, "op has no float32 samples"
    for sample in samples:
        expected = _outcome(op, sample, device=False)
        observed = _outcome(op, sample, device=True)
        _compare(expected, observed, op.name in METADATA_ONLY)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    "op", [op for op in OPS if _key(op) not in LIMITATIONS], ids=_key
)
def test_clean_simdev_agrees_with_cpu(op: Any) -> None:
    """Every sample's outputs match CPU bitwise (values, dtype, shape, strides)."""
    _check(op)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("op", [op for op in OPS if _key(op) in LIMITATIONS], ids=_key)
def test_listed_limitations_still_disagree(op: Any) -> None:
    """Each README limitation still fails; one that passes must leave the list."""
    with pytest.raises(AssertionError):
        _check(op)


def test_limitations_name_real_ops() -> None:
    """Every listed op exists in op_db, so the lists cannot rot silently."""
    keys = {_key(op) for op in op_db}
    assert set(LIMITATIONS) <= keys
    assert set(NOT_SIMDEV) <= keys
    assert len([op for op in OPS if _key(op) not in LIMITATIONS]) > 600
