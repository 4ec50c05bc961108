"""The dispatcher hooks a non-CPU backend implements and the CPU never runs:
``_copy_from`` and ``_copy_from_and_resize`` (what ``Tensor.copy_`` and ``.to()``
call between the host and a PrivateUse1 device, in both directions), the
``convolution*_overrideable`` pair (where ``convolution`` lands on a backend that
registers no convolution of its own) and the fused-attention pair
(``_scaled_dot_product_fused_attention_overrideable``: where scaled dot-product
attention lands on a backend that picks its own fused kernel). Each is called
explicitly on the device and judged against the CPU's own result for the same
arguments: the source's values for a copy, ``aten::convolution`` and
``aten::convolution_backward`` for the convolution hooks, attention from its
definition (output, log-sum-exp, autograd's gradients) for the attention hooks,
whose other results (sequence offsets, random state) are the backend's own.
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


def _attention_inputs(dtype: str | None) -> tuple[torch.Tensor, ...]:
    """query (1, 2, 4, 8), key and value (1, 2, 5, 8), an additive bias (4, 5) and
    the output's gradient."""
    kind = getattr(torch, dtype or "float32")
    g = torch.Generator().manual_seed(20240612)
    shapes = ((1, 2, 4, 8), (1, 2, 5, 8), (1, 2, 5, 8), (4, 5), (1, 2, 4, 8))
    return tuple(torch.rand(s, generator=g, dtype=kind) - 0.5 for s in shapes)


FUSED = A._scaled_dot_product_fused_attention_overrideable
FUSED_BACKWARD = A._scaled_dot_product_fused_attention_overrideable_backward


def _attention_hooks(device: str, dtype: str | None) -> dict[str, Any]:
    q, k, v, bias, grad = (t.to(device) for t in _attention_inputs(dtype))
    results = FUSED(q, k, v, bias)
    out, logsumexp, cum_q, cum_k, max_q, max_k, seed, offset, _debug = results
    grads = FUSED_BACKWARD(
        grad, q, k, v, bias, [True] * 4, out, logsumexp, cum_q, cum_k, max_q, max_k,
        0.0, False, seed, offset,
    )  # fmt: skip
    return {"output": out, "logsumexp": logsumexp, "gradients": list(grads)}


def _attention_reference(dtype: str | None) -> dict[str, Any]:
    """Attention from its definition on the CPU: softmax(q k^T / sqrt(d) + bias) v,
    the log-sum-exp of each query's scores, and autograd's gradients of all four."""
    q, k, v, bias, grad = (
        t.requires_grad_(i < 4) for i, t in enumerate(_attention_inputs(dtype))
    )
    scores = q @ k.transpose(-2, -1) / 8**0.5 + bias
    output = torch.softmax(scores, -1) @ v
    gradients = list(torch.autograd.grad(output, [q, k, v, bias], grad))
    return {
        "output": output.detach(),
        "logsumexp": torch.logsumexp(scores, -1).detach().float(),
        "gradients": gradients,
    }


attention_hooks = case(
    SUITE,
    "fused_attention_hooks",
    3,
    dtypes=("float32",),
    source=ExpectedSource.CPU_REFERENCE,
    expected=_attention_reference,
    needs_other_device=True,
    surfaces=(
        "aten::_scaled_dot_product_fused_attention_overrideable",
        "aten::_scaled_dot_product_fused_attention_overrideable_backward",
    ),
)(_attention_hooks)


CASES = (copy_hooks, conv_hooks, attention_hooks)
