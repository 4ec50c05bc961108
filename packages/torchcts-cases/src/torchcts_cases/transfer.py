"""Move nested inputs to a device and results back, without ever reading device memory
through NumPy: results come back with ``.to("cpu")`` (meta results stay as metadata).
"""

from __future__ import annotations

from typing import Any

import torch


def to_device(obj: Any, device: str, *, grad: bool = False) -> Any:
    """A copy of `obj` with every tensor on `device`; `grad` keeps requires_grad leaves.

    Tensors are always copied (even CPU to CPU) so a run never mutates the sample.
    Aliasing inside the sample survives: the same tensor twice stays one tensor, and a
    view stays a view of its (copied) base, so overlap and out= aliasing errors behave
    as they do on CPU. A ``device`` keyword (factory samples say "cpu") is retargeted.
    """
    return _move(obj, device, grad, {})


def _move(obj: Any, device: str, grad: bool, memo: dict[int, torch.Tensor]) -> Any:
    if isinstance(obj, torch.Tensor):
        return _tensor(obj, device, grad, memo)
    if isinstance(obj, torch.device):
        return torch.device(device)
    if isinstance(obj, list):
        return [_move(o, device, grad, memo) for o in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(_move(o, device, grad, memo) for o in obj)
    if isinstance(obj, dict):
        return {
            k: (_retarget(v, device) if k == "device" else _move(v, device, grad, memo))
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
    ):
        moved_base = _tensor(base, device, grad, memo)
        moved = moved_base.as_strided(t.size(), t.stride(), t.storage_offset())
    else:
        moved = t.detach().to(device, copy=True)
        if grad and t.requires_grad:
            moved.requires_grad_(True)
    memo[id(t)] = moved
    return moved


def _retarget(value: Any, device: str) -> Any:
    if isinstance(value, str | torch.device):
        return torch.device(device)
    return value


def to_host(obj: Any) -> Any:
    """Tensors copied to CPU (detached); meta tensors kept, since they hold no values."""
    if isinstance(obj, torch.Tensor):
        tensor = obj.detach()
        return tensor if tensor.device.type in ("cpu", "meta") else tensor.to("cpu")
    if isinstance(obj, list):
        return [to_host(o) for o in obj]
    if isinstance(obj, tuple):
        return tuple(to_host(o) for o in obj)
    if isinstance(obj, dict):
        return {k: to_host(v) for k, v in obj.items()}
    return obj


def tensors_in(obj: Any) -> list[torch.Tensor]:
    """Every tensor inside a nested structure, in a stable order."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, list | tuple):
        return [t for o in obj for t in tensors_in(o)]
    if isinstance(obj, dict):
        return [t for k in obj for t in tensors_in(obj[k])]
    return []
