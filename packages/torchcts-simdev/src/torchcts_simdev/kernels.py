"""Kernels simdev supplies itself, and repairs to arguments that crossed into Python.

The fallback runs CPU overloads on CPU payloads; these are the cases where that alone
is not enough: overloads with no CPU kernel, copies to the host, and random ops that
must draw from simdev's own generator (numbers that lost their tensor wrapper are
`torchcts_simdev.wrapped_numbers`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts_simdev.attention import fused_attention, fused_attention_backward
from torchcts_simdev.device import GENERATOR
from torchcts_simdev.payload import to_cpu
from torchcts_simdev.rnn_cells import RNN_CELL_IMPLS

_Tensor = torch.Tensor
_Device = torch.device


def _copy_from(src: _Tensor, dst: _Tensor, non_blocking: bool = False) -> _Tensor:
    return dst.copy_(src)


def _copy_from_and_resize(src: _Tensor, dst: _Tensor) -> _Tensor:
    dst.resize_(src.shape)
    return dst.copy_(src)


def _convolution(
    input: _Tensor,
    weight: _Tensor,
    bias: _Tensor | None,
    *rest: Any,
) -> _Tensor:
    result: _Tensor = torch.ops.aten.convolution.default(input, weight, bias, *rest)
    return result


def _convolution_backward(
    grad_output: _Tensor,
    input: _Tensor,
    weight: _Tensor,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    transposed: bool,
    output_padding: list[int],
    groups: int,
    output_mask: list[bool],
) -> tuple[_Tensor | None, ...]:
    bias_sizes = [grad_output.size(1)] if output_mask[2] else None
    result: tuple[_Tensor | None, ...] = torch.ops.aten.convolution_backward.default(
        grad_output,
        input,
        weight,
        bias_sizes,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        output_mask,
    )
    return result


def _efficientzerotensor(
    size: list[int],
    *,
    dtype: torch.dtype | None = None,
    layout: torch.layout | None = None,
    device: _Device | None = None,
    pin_memory: bool | None = None,
) -> _Tensor:
    """Zeros with real storage: what autograd asks for as a "zero tensor".

    The CPU kernel returns a ZeroTensor, a tensor whose storage has no data (its
    ZeroTensor dispatch key makes ops treat it as zeros). A Python backend cannot give
    its own tensors that key, and a storage without data has no payload to wrap, so
    simdev materialises the zeros: backward formulas that return one (``sgn`` and
    ``sinc`` of real inputs) get equal values, as on a backend without ZeroTensor.
    """
    return torch.zeros(size, dtype=dtype, layout=layout)


# Overloads whose CPU kernel does not compute them (the *_overrideable hooks that a
# non-CPU backend gets, and the CPU's data-less zero tensor), implemented here over
# CPU payloads with the CPU's kernels.
IMPLS: dict[str, Callable[..., Any]] = {
    "aten::_efficientzerotensor": _efficientzerotensor,
    "aten::_copy_from": _copy_from,
    "aten::_copy_from_and_resize": _copy_from_and_resize,
    "aten::convolution_overrideable": _convolution,
    "aten::convolution_backward_overrideable": _convolution_backward,
    "aten::_scaled_dot_product_fused_attention_overrideable": fused_attention,
    "aten::_scaled_dot_product_fused_attention_overrideable_backward": (
        fused_attention_backward
    ),
    **RNN_CELL_IMPLS,
}
# Overloads whose generic (CompositeExplicitAutograd) kernel would win over a fallback:
# the *_overrideable hooks (which only raise), ops whose generic kernel rounds
# differently from the CPU kernel; conj_physical_ and kaiser_window, whose generic
# kernels call a DispatchStub that only built-in devices fill ("missing kernel for
# simdev"); ``addr_``, whose generic kernel calls
# ``addr_out(self, self, ...)`` and relies on C++ reference identity
# (``&result == &self``) to skip broadcasting self; that identity cannot survive a
# boxed call, so reached through ``addr.out`` an in-place addr_ would broadcast and
# resize self where the CPU refuses; and ``mode.values`` (mode's out=), whose generic
# kernel refuses every device but CPU, CUDA and XPU ("mode only supports CPU, CUDA and
# XPU device type"), so that an out-of-tree backend must register its own, as a C++
# one would; and ``_batch_norm_no_update``, whose generic kernel is the CPU's own
# batch_norm_cpu ("Expected tensor to have CPU Backend"). simdev registers the
# fallback for them explicitly.
EXPLICIT_OPS = (
    "_to_copy",
    "conj_physical_",
    "kaiser_window",
    "kaiser_window.periodic",
    "kaiser_window.beta",
    "convolution_overrideable",
    "convolution_backward_overrideable",
    "_scaled_dot_product_fused_attention_overrideable",
    "_scaled_dot_product_fused_attention_overrideable_backward",
    "_stack",
    "_stack.out",
    "addr",
    "addr_",
    "addr.out",
    "all.dims",
    "all.dims_out",
    "any.dims",
    "any.dims_out",
    "linalg__powsum",
    "mode.values",
    "_batch_norm_no_update",
    "native_group_norm",
    "native_layer_norm",
)
# Overloads that write an argument their schema does not mark as written.
EXTRA_WRITES: dict[str, tuple[int | str, ...]] = {"aten::_copy_from_and_resize": (1,)}


def to_host(kwargs: dict[str, Any]) -> bool:
    device = kwargs.get("device")
    return isinstance(device, _Device) and device.type == "cpu"


def copy_to_host(args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Tensor:
    """simdev -> CPU ``_to_copy``: a plain CPU result, and no pinned staging buffer.

    The generic kernel stages a non-blocking copy in pinned memory, which needs an
    allocator a Python backend cannot register; simdev copies synchronously.
    """
    source = args[0]
    host = to_cpu(source) if not source.is_cpu else source
    options = dict(kwargs, non_blocking=False)
    result: _Tensor = torch.ops.aten._to_copy.default(host, *args[1:], **options)
    return result


def first_tensor(values: tuple[Any, ...]) -> _Tensor | None:
    for value in values:
        if isinstance(value, _Tensor):
            return value
        if isinstance(value, list | tuple):
            for item in value:
                if isinstance(item, _Tensor):
                    return item
    return None


def use_simdev_generator(
    where: tuple[int, str], cargs: list[Any], ckwargs: dict[str, Any]
) -> None:
    position, name = where
    if name in ckwargs:
        if ckwargs[name] is None:
            ckwargs[name] = GENERATOR
    elif position < len(cargs):
        if cargs[position] is None:
            cargs[position] = GENERATOR
    else:
        ckwargs[name] = GENERATOR
