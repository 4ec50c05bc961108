"""Kernels simdev supplies itself, and repairs to arguments that crossed into Python.

The fallback runs CPU overloads on CPU payloads; these are the cases where that alone
is not enough: overloads with no CPU kernel, copies to the host, numbers that lost
their tensor wrapper, and random ops that must draw from simdev's own generator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

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


# Overloads whose CPU kernel does not compute them (the *_overrideable hooks that a
# non-CPU backend gets), implemented here over CPU payloads with the CPU's kernels.
IMPLS: dict[str, Callable[..., Any]] = {
    "aten::_copy_from": _copy_from,
    "aten::_copy_from_and_resize": _copy_from_and_resize,
    "aten::convolution_overrideable": _convolution,
    "aten::convolution_backward_overrideable": _convolution_backward,
    **RNN_CELL_IMPLS,
}
# Overloads whose generic (CompositeExplicitAutograd) kernel would win over a fallback:
# the *_overrideable hooks (which only raise), ops whose generic kernel rounds
# differently from the CPU kernel, and conj_physical_, whose generic kernel calls a
# DispatchStub that only built-in devices fill ("missing kernel for simdev"). simdev
# registers the fallback for them explicitly.
EXPLICIT_OPS = (
    "_to_copy",
    "conj_physical_",
    "convolution_overrideable",
    "convolution_backward_overrideable",
    "_stack",
    "_stack.out",
    "addr",
    "addr.out",
    "all.dims",
    "all.dims_out",
    "any.dims",
    "any.dims_out",
    "linalg__powsum",
    "native_group_norm",
    "native_layer_norm",
)
_CATEGORY = {bool: 0, int: 1, float: 2, complex: 3}
NUMBER_TYPES = frozenset(_CATEGORY)
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


def rewrap_number(where: int | str, cargs: list[Any], ckwargs: dict[str, Any]) -> None:
    """Turn a Python number back into the 0-dim tensor the schema asks for.

    C++ callers pass numbers to Tensor arguments as "wrapped number" tensors; crossing
    into Python turns them into plain numbers, which the CPU overload then rejects.
    The flag itself cannot be set from Python, so the number becomes a 0-dim tensor of
    the dtype a wrapped number would have promoted to (the first tensor's, when the
    number's category is not higher).
    """
    if isinstance(where, int):
        if where >= len(cargs) or type(cargs[where]) not in _CATEGORY:
            return
        value = cargs[where]
    else:
        if type(ckwargs.get(where)) not in _CATEGORY:
            return
        value = ckwargs[where]
    reference = first_tensor(tuple(cargs))
    if reference is None:
        reference = first_tensor(tuple(ckwargs.values()))
    dtype = _number_dtype(value, reference)
    tensor = torch.tensor(value, dtype=dtype)
    if isinstance(where, int):
        cargs[where] = tensor
    else:
        ckwargs[where] = tensor


def _dtype_category(dtype: torch.dtype) -> int:
    """The `_CATEGORY` of a dtype: bool 0, integer 1, floating 2, complex 3."""
    if dtype.is_complex:
        return 3
    if dtype.is_floating_point:
        return 2
    return 0 if dtype == torch.bool else 1


def _number_dtype(value: Any, reference: _Tensor | None) -> torch.dtype:
    category = _CATEGORY[type(value)]
    if reference is not None:
        ref = reference.dtype
        if category <= _dtype_category(ref):
            return ref
    default = torch.get_default_dtype()
    return (torch.bool, torch.int64, default, default.to_complex())[category]


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
