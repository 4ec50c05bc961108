"""Sample tensors that stay on the CPU when a case runs on a device.

PyTorch's own device tests build each sample for the device under test
(``op.sample_inputs(device, dtype)``), and a generator that needs a CPU tensor whatever
the device builds that one on the CPU: tensor_split's index tensor (PyTorch requires
``tensor_indices_or_sections`` on the CPU), narrow's 0-dim start, the CPU index tensors
``__getitem__`` and ``index_put`` accept with a device tensor. TorchCTS builds samples
on the CPU and copies them to the device, which loses that distinction. So the same
sample is also built for the meta device (no data, so cheap), and a tensor that stays
on the CPU there stays on the CPU in the device run.

Where the generator cannot build the sample for meta (it reads values with
``.item()``) or builds a differently shaped sample there, nothing is pinned: every
tensor goes to the device, as before. A failed pass is remembered, so it is not
retried for every sample.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases import opinfo_source
from torchcts_cases.spec import OracleUnavailable
from torchcts_cases.transfer import tensors_in

PROBE_DEVICE = "meta"
# (op segment, variant, dtype) whose meta pass failed: not tried again in this process
_FAILED: set[tuple[str, str, str]] = set()


def cpu_pinned(
    op: Any, variant: str, dtype: torch.dtype | None, index: int, item: Any
) -> frozenset[int]:
    """Positions, in `tensors_in` order of ``(input, args, kwargs)``, of the tensors
    of `item` (sample `index` built on the CPU) that OpInfo keeps on the CPU when it
    builds the sample for another device. Leaves the global RNGs as they were."""
    key = (opinfo_source.op_segment(op), variant, str(dtype))
    if key in _FAILED:
        return frozenset()
    try:
        probe = opinfo_source.nth_item_on(op, variant, dtype, index, PROBE_DEVICE)
    except OracleUnavailable:
        _FAILED.add(key)
        return frozenset()
    built = tensors_in(_parts(item))
    probed = tensors_in(_parts(probe))
    if len(built) != len(probed) or any(
        a.shape != b.shape or a.dtype != b.dtype
        for a, b in zip(built, probed, strict=True)
    ):
        return frozenset()  # not the same sample: nothing is known
    return frozenset(i for i, t in enumerate(probed) if t.device.type == "cpu")


def pinned_tensors(item: Any, positions: frozenset[int]) -> frozenset[int]:
    """The ids of `item`'s tensors at `positions` (what `to_device` keeps on CPU)."""
    if not positions:
        return frozenset()
    found = tensors_in(_parts(item))
    return frozenset(id(t) for i, t in enumerate(found) if i in positions)


def _parts(item: Any) -> tuple[Any, Any, Any]:
    sample = getattr(item, "sample_input", item)
    return (sample.input, sample.args, sample.kwargs)
