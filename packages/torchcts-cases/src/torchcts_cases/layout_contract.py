"""Which result strides are an op's contract, and the judgement of them.

Values comparisons leave strides unjudged (``check_stride=False``): most ops leave
their result layout to the backend. Where PyTorch promises a layout, the CPU
reference's layout is expected, and a difference fails naming "strides" or
"storage offset". Each rule is derived from PyTorch's own metadata, never from a
hand list of op names (docs/contracts.md, "Strides and layout", says where each
comes from):

1. **Views** (forward, method and noncontiguous variants): a result tensor that
   shares storage with an input on the CPU, in a call that names no device (``to``
   aliases on the CPU what it copies from any other device), from an op whose aten schema returns an
   alias of its input (``Tensor(a)``, ``OpOverload.is_view``) or whose CPU call
   dispatches only such overloads (``T``, ``__getitem__``, ``meshgrid``...). A view's
   memory is its base's, so its strides of every dimension longer than one and its
   storage offset follow from the base: any backend whose view aliases the base
   correctly has the CPU's. In-place views (``t_``, ``squeeze_``: tag
   ``inplace_view``) are judged the same way on ``self``.
2. **Memory formats** (forward, method, noncontiguous; in place: ``self``): an op
   whose schema takes ``memory_format`` (clone, contiguous, to, the ``*_like``
   factories, resize_) sets the layout when the sample names a format or the
   schema's default is one, and preserves it under ``preserve_format`` when the
   input is non-overlapping and dense (torch.preserve_format's documented promise;
   other inputs "follow contiguous_format or the input's order", left unjudged).
3. **out=**: an ``out=`` tensor of the right shape keeps the strides the caller gave
   it (PyTorch's test_ops ``test_out``: "Strides are not the same!"); its expected
   strides are those CPU's own out= call left.

Only dimensions longer than one carry strides that address memory (PyTorch's
``check_significant_strides``), so only those are compared.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from torchcts_cases.transfer import tensors_in

VIEW = "a view: its strides and storage offset follow from its base"
INPLACE_VIEW = "an in-place view: self's strides and storage offset follow from it"
OUT_KEEPS = "an out= tensor of the right shape keeps the strides it was given"
SETS_FORMAT = "memory_format={} sets the result's layout"
PRESERVES = "preserve_format keeps a dense input's strides"
# variants whose result is the functional call's, where rules 1 and 2 apply
FUNCTIONAL_VARIANTS = frozenset({"forward", "method", "noncontiguous"})


@dataclass(frozen=True)
class Expected:
    """The layout one result tensor must have: where it sits in the result (as the
    comparison names it), its CPU sizes, strides and (for views) storage offset."""

    path: str
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int | None
    why: str


def judge_layout(expected: tuple[Expected, ...], observed: Any) -> str | None:
    """The first tensor of `observed` whose layout is not the expected one, in one
    line naming strides or the storage offset and why they are contract; None when
    all agree. A tensor missing or of another shape is left to the values
    comparison, which names that."""
    if not expected:
        return None
    found = dict(tensor_paths(observed, "output"))
    for want in expected:
        got = found.get(want.path)
        if got is None or tuple(got.shape) != want.sizes:
            continue
        if got.layout != torch.strided:
            return (
                f"{want.path}: layout {got.layout}, expected torch.strided ({want.why})"
            )
        if not _same_significant(want.sizes, want.strides, tuple(got.stride())):
            return (
                f"{want.path}: strides {tuple(got.stride())}, expected "
                f"{want.strides} ({want.why})"
            )
        if want.offset is not None and got.storage_offset() != want.offset:
            return (
                f"{want.path}: storage offset {got.storage_offset()}, expected "
                f"{want.offset} ({want.why})"
            )
    return None


def functional_contract(
    op: Any,
    inputs: Any,
    kwargs: dict[str, Any],
    result: Any,
    trace: Callable[[], list[str]],
) -> tuple[Expected, ...]:
    """Rules 1 and 2 for a functional call's CPU `result` on CPU `inputs`; `trace`
    names the aten overloads the call dispatches (asked only for an aliasing result
    of an op whose own schema is not a view)."""
    views = _views(op, inputs, result, trace)
    if views:
        return views
    return _format_rule(op, inputs, kwargs, result, "output")


def inplace_contract(
    op: Any, kwargs: dict[str, Any], self_: Any
) -> tuple[Expected, ...]:
    """Rules 1 (in-place views) and 2 for an in-place call's CPU `self` after it."""
    if not isinstance(self_, torch.Tensor):
        return ()
    if _inplace_view(_packet_name(op)):
        return tuple(_expect(self_, "output.self", INPLACE_VIEW, offset=True))
    return _format_rule(op, self_, kwargs, self_, "output.self")


def out_contract(cpu_out: Any) -> tuple[Expected, ...]:
    """Rule 3: the strides CPU's own out= call left on the out tensors."""
    return tuple(
        e
        for path, t in tensor_paths(cpu_out, "output.output")
        for e in _expect(t, path, OUT_KEEPS, offset=False)
    )


def tensor_paths(obj: Any, path: str) -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor in a nested result with the path the comparison names it by."""
    if isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            yield from tensor_paths(item, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for key, item in obj.items():
            yield from tensor_paths(item, f"{path}.{key}")


def _views(
    op: Any, inputs: Any, result: Any, trace: Callable[[], list[str]]
) -> tuple[Expected, ...]:
    given = tensors_in(inputs)
    if not any(t._is_view() or any(t is i for i in given) for t in tensors_in(result)):
        return ()  # the usual case, and a cheap one: only fresh tensors
    storages = {_storage(t) for t in given} - {None}
    aliasing = [
        (path, t)
        for path, t in tensor_paths(result, "output")
        if t.layout == torch.strided and _storage(t) in storages
    ]
    if not aliasing or _names_a_device(inputs) or not _is_view_op(op, trace):
        # to("cpu") aliases on the CPU, and is a copy from any other device
        return ()
    return tuple(e for path, t in aliasing for e in _expect(t, path, VIEW, offset=True))


def _names_a_device(inputs: Any) -> bool:
    """Whether a call's arguments name a device (a torch.device, or a string that
    is one): the call may then move data, which is a copy from another device."""
    if isinstance(inputs, torch.device):
        return True
    if isinstance(inputs, str):
        try:
            torch.device(inputs)
        except (RuntimeError, ValueError):
            return False
        return True
    if isinstance(inputs, list | tuple):
        return any(_names_a_device(item) for item in inputs)
    if isinstance(inputs, dict):
        return any(_names_a_device(item) for item in inputs.values())
    return False


def _is_view_op(op: Any, trace: Callable[[], list[str]]) -> bool:
    if _packet_is_view(_packet_name(op)):
        return True
    reached = trace()
    return bool(reached) and all(_overload_is_view(name) for name in reached)


def _format_rule(
    op: Any, inputs: Any, kwargs: dict[str, Any], result: Any, root: str
) -> tuple[Expected, ...]:
    takes, default = _memory_format_argument(_packet_name(op))
    if not takes and "memory_format" not in kwargs:
        return ()
    chosen = kwargs.get("memory_format", default)
    self_ = inputs[0] if isinstance(inputs, tuple | list) and inputs else inputs
    if chosen is None or chosen == torch.preserve_format:
        if isinstance(self_, torch.Tensor):
            if not _dense(self_):
                return ()  # documented as "follows contiguous_format": unjudged
            why = PRESERVES
        else:
            why = SETS_FORMAT.format("torch.contiguous_format")  # a factory's default
    else:
        why = SETS_FORMAT.format(chosen)
    paths = tensor_paths(result, root)
    return tuple(e for path, t in paths for e in _expect(t, path, why, offset=False))


def _expect(
    t: torch.Tensor, path: str, why: str, *, offset: bool
) -> Iterator[Expected]:
    if t.layout != torch.strided or t.numel() == 0 or t.is_quantized:
        return
    at = int(t.storage_offset()) if offset else None
    yield Expected(path, tuple(t.shape), tuple(t.stride()), at, why)


def _same_significant(
    sizes: tuple[int, ...], want: tuple[int, ...], got: tuple[int, ...]
) -> bool:
    return all(n <= 1 or w == g for n, w, g in zip(sizes, want, got, strict=True))


def _dense(t: torch.Tensor) -> bool:
    """c10's non-overlapping-and-dense: the dims longer than one, fastest first,
    each stride the product of the sizes before it."""
    if t.layout != torch.strided:
        return False
    dims = sorted((s, n) for n, s in zip(t.shape, t.stride(), strict=True) if n != 1)
    step = 1
    for stride, size in dims:
        if stride != step:
            return False
        step *= size
    return True


def _storage(t: torch.Tensor) -> int | None:
    if t.device.type != "cpu" or t.layout != torch.strided or t.numel() == 0:
        return None
    ptr = t.untyped_storage().data_ptr()
    return ptr or None


def _packet_name(op: Any) -> str:
    return str(getattr(op, "aten_name", None) or op.name)


@functools.cache
def _packet(name: str) -> Any:
    return getattr(torch.ops.aten, name) if hasattr(torch.ops.aten, name) else None


@functools.cache
def _packet_is_view(name: str) -> bool:
    packet = _packet(name)
    if packet is None:
        return False
    return any(getattr(packet, o).is_view for o in packet.overloads())


@functools.cache
def _inplace_view(name: str) -> bool:
    packet = _packet(f"{name}_")
    if packet is None:
        return False
    return any(
        torch.Tag.inplace_view in getattr(packet, o).tags for o in packet.overloads()
    )


@functools.cache
def _overload_is_view(qualified: str) -> bool:
    namespace, _, rest = qualified.partition("::")
    name, _, overload = rest.partition(".")
    try:
        found = getattr(
            getattr(getattr(torch.ops, namespace), name), overload or "default"
        )
    except (AttributeError, RuntimeError):
        return False
    return bool(found.is_view)


@functools.cache
def _memory_format_argument(name: str) -> tuple[bool, Any]:
    """(whether an overload of the packet takes memory_format, the format its
    default names, None for "preserve"/"contiguous for factories")."""
    packet = _packet(name)
    if packet is None:
        return False, None
    for overload in packet.overloads():
        for argument in getattr(packet, overload)._schema.arguments:
            if argument.name == "memory_format":
                return True, _FORMATS.get(argument.default_value)
    return False, None


# the schema's default (c10::MemoryFormat as an int) as the Python object
_FORMATS: dict[Any, Any] = {
    0: torch.contiguous_format,
    2: torch.channels_last,
    3: torch.channels_last_3d,
}
