"""The dispatcher hooks a non-CPU backend implements and the CPU never runs:
``_copy_from`` and ``_copy_from_and_resize`` (what ``Tensor.copy_`` and ``.to()``
call between the host and a PrivateUse1 device, in both directions) and the
``convolution*_overrideable`` pair (where ``convolution`` lands on a backend that
registers no convolution of its own). Each is called explicitly on the device and
judged against the CPU's own result for the same arguments: the source's values for
a copy, ``aten::convolution`` and ``aten::convolution_backward`` for the hooks.
The CPU's kernels of these hooks raise by design, so the cases need another device.
"""

from __future__ import annotations

from typing import Any

import torch
from torchcts_schema import ExpectedSource

from torchcts_cases.suites.base import case

SUITE = "copies"
A = torch.ops.aten


def _values(dtype: str | None) -> torch.Tensor:
    """The copied values, built on the CPU: a (3, 4) ramp with a sign change."""
    kind = getattr(torch, dtype or "float32")
    return (torch.arange(12) - 5).to(kind).reshape(3, 4)


def _copy_hooks(device: str, dtype: str | None) -> dict[str, Any]:
    host = _values(dtype)
    kind = host.dtype
    out: dict[str, Any] = {}
    dst = torch.zeros(3, 4, dtype=kind, device=device)
    out["host to device"] = A._copy_from(host, dst)
    out["host to device written"] = dst
    back = torch.zeros(3, 4, dtype=kind)
    out["device to host"] = A._copy_from(dst, back)
    out["device to host written"] = back
    grown = torch.empty(0, dtype=kind, device=device)
    out["resize host to device"] = A._copy_from_and_resize(host, grown)
    out["resize host to device written"] = grown
    given = torch.empty(0, dtype=kind, device=device)
    dst = torch.zeros(3, 4, dtype=kind, device=device)
    returned = A._copy_from.out(host, dst, out=given)
    out["out= returns out"] = returned is given
    out["out= result"] = given
    given = torch.empty(0, dtype=kind, device=device)
    grown = torch.empty(0, dtype=kind, device=device)
    returned = A._copy_from_and_resize.out(host, grown, out=given)
    out["resize out= returns out"] = returned is given
    out["resize out= result"] = given
    return out


def _copied(dtype: str | None) -> dict[str, Any]:
    """The reviewed expectation: every copy holds the source's values."""
    host = _values(dtype)
    keys = (
        *("host to device", "host to device written", "device to host"),
        *("device to host written", "resize host to device"),
        *("resize host to device written", "out= result", "resize out= result"),
    )
    return {
        **{k: host.clone() for k in keys},
        "out= returns out": True,
        "resize out= returns out": True,
    }


copy_hooks = case(
    SUITE,
    "copy_from_hooks",
    3,
    dtypes=("float32", "int64", "bool"),
    source=ExpectedSource.PROPERTY,
    expected=_copied,
    needs_other_device=True,
    surfaces=(
        *("aten::_copy_from", "aten::_copy_from.out"),
        *("aten::_copy_from_and_resize", "aten::_copy_from_and_resize.out"),
    ),
)(_copy_hooks)


def _conv_inputs(dtype: str | None) -> tuple[torch.Tensor, ...]:
    """input (1, 2, 5, 5), 3 filters of 2x3x3, bias, and the output's gradient."""
    kind = getattr(torch, dtype or "float32")
    g = torch.Generator().manual_seed(20240611)
    shapes = ((1, 2, 5, 5), (3, 2, 3, 3), (3,), (1, 3, 3, 3))
    return tuple(torch.rand(s, generator=g, dtype=kind) - 0.5 for s in shapes)


# stride, padding, dilation, transposed, output_padding, groups
GEOMETRY = ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)


def _conv_hooks(device: str, dtype: str | None) -> dict[str, Any]:
    inp, weight, bias, grad = (t.to(device) for t in _conv_inputs(dtype))
    out: dict[str, Any] = {
        "convolution_overrideable": A.convolution_overrideable(
            inp, weight, bias, *GEOMETRY
        )
    }
    given = torch.empty(0, dtype=inp.dtype, device=device)
    returned = A.convolution_overrideable.out(inp, weight, bias, *GEOMETRY, out=given)
    out["convolution_overrideable.out"] = given
    out["convolution_overrideable.out returns out"] = returned is given
    mask = [True, True, True]
    out["convolution_backward_overrideable"] = list(
        A.convolution_backward_overrideable(grad, inp, weight, *GEOMETRY, mask)
    )
    outs = [torch.empty(0, dtype=inp.dtype, device=device) for _ in range(3)]
    A.convolution_backward_overrideable.out(
        grad, inp, weight, *GEOMETRY, mask, out0=outs[0], out1=outs[1], out2=outs[2]
    )
    out["convolution_backward_overrideable.out"] = outs
    return out


def _conv_reference(dtype: str | None) -> dict[str, Any]:
    """What the hooks stand for, computed by the CPU's convolution kernels."""
    inp, weight, bias, grad = _conv_inputs(dtype)
    forward = A.convolution(inp, weight, bias, *GEOMETRY)
    grads = list(
        A.convolution_backward(grad, inp, weight, [3], *GEOMETRY, [True, True, True])
    )
    return {
        "convolution_overrideable": forward,
        "convolution_overrideable.out": forward,
        "convolution_overrideable.out returns out": True,
        "convolution_backward_overrideable": grads,
        "convolution_backward_overrideable.out": grads,
    }


conv_hooks = case(
    SUITE,
    "convolution_hooks",
    3,
    dtypes=("float32", "float64"),
    source=ExpectedSource.CPU_REFERENCE,
    expected=_conv_reference,
    needs_other_device=True,
    surfaces=(
        *("aten::convolution_overrideable", "aten::convolution_overrideable.out"),
        "aten::convolution_backward_overrideable",
        "aten::convolution_backward_overrideable.out",
    ),
)(_conv_hooks)


CASES = (copy_hooks, conv_hooks)
