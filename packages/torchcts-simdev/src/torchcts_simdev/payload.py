"""Where simdev tensors keep their bytes: a CPU storage per device storage.

A simdev tensor is a real PrivateUse1 tensor whose storage has the same data pointer and
size as a CPU ``UntypedStorage`` (its *payload*). Views share the device storage, so
they share the payload; a tensor's CPU view is rebuilt from its own sizes, strides and
offset on each call. The map is keyed by the device storage's identity, not by an
attribute on a tensor object, because PyTorch makes new tensor objects for the same data
(``nn.Parameter``, ``.data``); a weak reference drops the entry when the storage dies.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch

from torchcts_simdev.memory_stats import STATS

# Spelled by its dispatch key: the name "simdev" exists only after registration.
DEVICE = torch.device("privateuseone", 0)
CPU_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_SET = torch.ops.aten.set_.source_Storage_storage_offset
_EMPTY_META = torch._C._acc.create_empty_tensor
_FROM_POINTER = torch._C._construct_storage_from_data_pointer
_EMPTY_CPU = torch.empty
_SET_CONJ = torch._C._set_conj
_SET_NEG = torch._C._set_neg

_payloads: dict[int, torch.UntypedStorage] = {}
_watchers: dict[int, weakref.ref[torch.UntypedStorage]] = {}


class PayloadMissing(RuntimeError):
    """A simdev tensor whose bytes are unknown (made outside simdev's kernels)."""


def live_storages() -> int:
    """How many device storages are alive (a leak check for tests and benchmarks)."""
    return len(_payloads)


def payload_storage(storage: torch.UntypedStorage) -> torch.UntypedStorage:
    """The CPU storage behind a simdev storage."""
    try:
        return _payloads[storage._cdata]
    except KeyError:
        raise PayloadMissing(
            "simdev: this tensor's storage was not made by simdev's kernels "
            "(no payload is registered for it)"
        ) from None


def lookup(storage: torch.UntypedStorage) -> torch.UntypedStorage | None:
    """The CPU storage behind a simdev storage, or None for any other storage."""
    return _payloads.get(storage._cdata)


def to_cpu(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU tensor with ``tensor``'s dtype, sizes, strides and offset on its payload."""
    return view_on(tensor, payload_storage(tensor.untyped_storage()))


def view_on(tensor: torch.Tensor, cpu: torch.UntypedStorage) -> torch.Tensor:
    """``tensor``'s layout over the CPU storage ``cpu`` (its payload)."""
    view = _EMPTY_CPU(0, dtype=tensor.dtype).set_(
        cpu, tensor.storage_offset(), tensor.size(), tensor.stride()
    )
    if tensor.is_conj() or tensor.is_neg():
        _copy_math_bits(tensor, view)
    return view


def _copy_math_bits(source: torch.Tensor, target: torch.Tensor) -> None:
    # The lazy conjugate and negative bits are part of a tensor's value.
    if source.is_conj():
        _SET_CONJ(target, True)
    if source.is_neg():
        _SET_NEG(target, True)


def device_storage(
    cpu: torch.UntypedStorage, hint: torch.UntypedStorage | None = None
) -> torch.UntypedStorage:
    """A simdev storage over ``cpu``: ``hint`` when it still matches, else a new one."""
    if hint is not None and (
        hint.data_ptr() == cpu.data_ptr() and hint.nbytes() == cpu.nbytes()
    ):
        return hint
    storage: torch.UntypedStorage = _FROM_POINTER(  # type: ignore[assignment]
        cpu.data_ptr(), DEVICE, cpu.nbytes()
    )
    key = storage._cdata
    _payloads[key] = cpu
    _watchers[key] = weakref.ref(storage, _forget_callback(key))
    STATS.hold(cpu)
    return storage


def _forget_callback(key: int) -> Callable[[weakref.ref[torch.UntypedStorage]], None]:
    def forget(ref: weakref.ref[torch.UntypedStorage]) -> None:
        if _watchers.get(key) is ref:
            del _watchers[key]
            payload = _payloads.pop(key, None)
            if payload is not None:
                STATS.release(payload)

    return forget


def place(
    target: torch.Tensor, storage: torch.UntypedStorage, like: torch.Tensor
) -> None:
    """Point the simdev tensor ``target`` at ``storage`` with ``like``'s layout."""
    _SET.redispatch(
        CPU_KEYS, target, storage, like.storage_offset(), like.size(), like.stride()
    )


def wrap(cpu: torch.Tensor, hint: torch.UntypedStorage | None = None) -> torch.Tensor:
    """A simdev tensor over ``cpu``'s bytes (no copy), with its dtype and layout."""
    storage = device_storage(cpu.untyped_storage(), hint)
    tensor = _EMPTY_META((0,), cpu.dtype)
    place(tensor, storage, cpu)
    _copy_math_bits(cpu, tensor)
    return tensor


def sync(
    device: torch.Tensor, cpu: torch.Tensor, hint: torch.UntypedStorage | None
) -> None:
    """After an op wrote ``cpu`` (the payload view of ``device``), mirror its layout.

    An out= op may resize its output, an in-place view op (``t_``, ``as_strided_``) may
    change strides, and ``set_`` may swap storage; the device tensor must report the
    same metadata as the payload it now reads.
    """
    current = device.untyped_storage()
    storage = device_storage(cpu.untyped_storage(), hint)
    if (
        storage is current
        and device.storage_offset() == cpu.storage_offset()
        and device.size() == cpu.size()
        and device.stride() == cpu.stride()
    ):
        return
    place(device, storage, cpu)
