"""Move nested inputs to a device and results back, without ever reading device memory
through NumPy: results come back with ``.to("cpu")`` (meta results stay as metadata),
keeping the device tensor's strides and storage offset, which a judge may compare.
"""

from __future__ import annotations

from typing import Any

import torch


def to_device(
    obj: Any,
    device: str,
    *,
    grad: bool = False,
    keep_on_cpu: frozenset[int] = frozenset(),
) -> Any:
    """A copy of `obj` with every tensor on `device`; `grad` keeps requires_grad leaves.

    Tensors are always copied (even CPU to CPU) so a run never mutates the sample.
    Aliasing inside the sample survives: the same tensor twice stays one tensor, and a
    view stays a view of its (copied) base, so overlap and out= aliasing errors behave
    as they do on CPU. A ``device`` keyword (factory samples say "cpu") is retargeted.
    Tensors whose id is in `keep_on_cpu` (`torchcts_cases.cpu_pinned`) are copied to
    the CPU instead, with their bases.
    """
    return _move(obj, device, grad, {}, keep_on_cpu)


def _move(
    obj: Any,
    device: str,
    grad: bool,
    memo: dict[int, torch.Tensor],
    keep: frozenset[int] = frozenset(),
) -> Any:
    if isinstance(obj, torch.Tensor):
        target = "cpu" if id(obj) in keep else device
        return _tensor(obj, target, grad, memo)
    if isinstance(obj, torch.device):
        return torch.device(device)
    if isinstance(obj, list):
        return [_move(o, device, grad, memo, keep) for o in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_move(o, device, grad, memo, keep) for o in obj)
    if isinstance(obj, dict):
        return {
            k: (
                _retarget(v, device)
                if k == "device"
                else _move(v, device, grad, memo, keep)
            )
            for k, v in obj.items()
        }
    return obj


def _tensor(
    t: torch.Tensor, device: str, grad: bool, memo: dict[int, torch.Tensor]
) -> torch.Tensor:
    if id(t) in memo:
        return memo[id(t)]
    if t.device.type != "cpu":
        return t  # built on another device on purpose (device-mismatch error inputs)
    base = t._base
    if (
        base is not None
        and not (grad and t.requires_grad)
        and t.layout == torch.strided
        and t.dtype == base.dtype  # a real or imag view: its own copy
    ):
        moved_base = _tensor(base, device, grad, memo)
        moved = _same_bits(
            moved_base.as_strided(t.size(), t.stride(), t.storage_offset()), t
        )
    else:
        moved = t.detach().to(device, copy=True)
        if grad and t.requires_grad:
            moved.requires_grad_(True)
    memo[id(t)] = moved
    return moved


def _same_bits(view: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """`view` with the lazy conjugate and negative bits of `like`: ``as_strided``
    on the base keeps neither, so a conjugate view (OpInfo's complex samples have
    them) came across holding its base's values, the conjugates of its own."""
    if like.is_neg() and not view.is_neg():
        view = view._neg_view()
    if like.is_conj() and not view.is_conj():
        view = view.conj()
    return view


def _retarget(value: Any, device: str) -> Any:
    if isinstance(value, str | torch.device):
        return torch.device(device)
    return value


def to_host(obj: Any) -> Any:
    """Tensors copied to CPU (detached), with the sizes, strides and storage offset
    they had on the device; meta tensors kept, since they hold no values."""
    if isinstance(obj, torch.Tensor):
        tensor = obj.detach()
        return tensor if tensor.device.type in ("cpu", "meta") else host_copy(tensor)
    if isinstance(obj, list):
        return [to_host(o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(to_host(o) for o in obj)
    if isinstance(obj, dict):
        return {k: to_host(v) for k, v in obj.items()}
    return obj


def host_copy(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU copy of a device tensor with its sizes, strides and storage offset.

    ``.to("cpu")`` keeps strides only for a tensor that is non-overlapping and dense,
    and never the storage offset; it makes the others contiguous (an
    ``empty_strided`` result with gaps, an expanded gradient with stride 0, a strided
    view), and a judge would then see strides the device never returned. Those copy
    the storage span the tensor covers and view it as the device did, at the offset
    it had (a view's offset is its contract: `torchcts_cases.layout_contract`). The
    elements before the offset are left unwritten: the offset was reached from a
    sample built on the CPU, so it never asks for more host memory than that sample
    had. Lazy conj/neg bits are resolved by the copy, values unchanged.
    """
    host = tensor.to("cpu")
    offset = tensor.storage_offset()
    if (
        tensor.layout != torch.strided
        or tensor.is_quantized
        or tensor.numel() == 0
        or (host.stride() == tensor.stride() and offset == 0)
    ):
        return host
    span = 1 + sum(
        (n - 1) * s for n, s in zip(tensor.size(), tensor.stride(), strict=True)
    )
    flat = tensor.as_strided((span,), (1,), offset).to("cpu")
    if offset:
        storage = torch.empty(offset + span, dtype=tensor.dtype)
        storage[offset:].copy_(flat)
        flat = storage
    return flat.as_strided(tensor.size(), tensor.stride(), offset)


def tensors_in(obj: Any) -> list[torch.Tensor]:
    """Every tensor inside a nested structure, in a stable order."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, list | tuple):
        return [t for o in obj for t in tensors_in(o)]
    if isinstance(obj, dict):
        return [t for k in obj for t in tensors_in(obj[k])]
    return []


def backward_loss(outputs: list[torch.Tensor]) -> torch.Tensor:
    """The scalar a backward case differentiates: the sum of every output, a complex
    one's real and imaginary parts summed apart.

    ``real``/``imag`` rather than ``view_as_real``: the latter's backward goes through
    ``view_as_complex``, which refuses the gradient of an empty complex output ("Tensor
    must have a last dimension with stride 1") on CPU itself, so the case would have
    no reference; the two losses and their gradients are otherwise the same.
    """
    if not outputs:
        return torch.zeros(())
    sums = [t.real.sum() + t.imag.sum() if t.is_complex() else t.sum() for t in outputs]
    loss = sums[0]
    for extra in sums[1:]:
        loss = loss + extra
    return loss
