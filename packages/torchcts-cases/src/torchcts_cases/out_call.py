"""How an OpInfo out= call makes and hands over its out tensors: ``out=`` or by schema
name.

A ``torch.*`` function takes every output of a multi-output op as one ``out=`` tuple
(``torch.max(x, 0, out=(values, indices))``): its Python binding gathers them. An
OpInfo whose callable is an aten overload packet (``torch.ops.aten.<op>``) has no
such binding: the packet matches keyword arguments against the schema, whose out
arguments each have a name (``_batch_norm_with_update.out``: out, save_mean,
save_invstd, reserve), so ``out=(...)`` matches no overload. PyTorch's own test_out
marks that op an expected failure; the call by name is the out= call the schema
declares, so TorchCTS makes that one instead of giving up the case.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.spec import OracleUnavailable


def out_names(fn: Any, count: int) -> tuple[str, ...] | None:
    """The schema names of the `count` out arguments `fn` takes, when `fn` is an
    aten overload packet with one out overload of that many outputs; None when the
    outputs go as ``out=`` (a Python binding, or a single output named out)."""
    if not isinstance(fn, torch._ops.OpOverloadPacket):
        return None
    found = set()
    for name in fn.overloads():  # type: ignore[no-untyped-call]
        schema = getattr(fn, name)._schema
        outs = tuple(a.name for a in schema.arguments if a.is_out)
        if len(outs) == count:
            found.add(outs)
    if len(found) != 1:
        return None  # none, or several overloads disagree: leave the call as it was
    names = found.pop()
    return None if names == ("out",) else names


def out_kwargs(fn: Any, out: Any) -> dict[str, Any]:
    """The keyword arguments that pass `out` (a tensor or a tuple of them) to `fn`."""
    outs = tuple(out) if isinstance(out, list | tuple) else (out,)
    names = out_names(fn, len(outs))
    return {"out": out} if names is None else dict(zip(names, outs, strict=True))


def empty_like_on(template: Any, device: str) -> Any:
    """Empty out= tensors on `device` shaped like `template` (the functional CPU
    result: a tensor or a tuple of them; sparse ones keep their layout)."""
    if isinstance(template, torch.Tensor):
        if template.layout != torch.strided:
            return torch.empty_like(template).to(device)
        return torch.empty(template.shape, dtype=template.dtype, device=device)
    if isinstance(template, list | tuple):
        return (
            type(template)(empty_like_on(t, device) for t in template)
            if not hasattr(template, "_fields")
            else tuple(empty_like_on(t, device) for t in template)
        )
    raise OracleUnavailable(f"out= template of type {type(template).__name__}")


__all__ = ["empty_like_on", "out_kwargs", "out_names"]
