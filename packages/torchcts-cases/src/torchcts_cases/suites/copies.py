"""Copies and casts between CPU and the device: round trips are exact in every dtype."""

from __future__ import annotations

from typing import Any

import torch

from torchcts_cases.suites.base import case

SUITE = "copies"
DTYPES = (
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
    "complex64",
)


def _sample(dtype: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(1234)
    d = getattr(torch, dtype)
    if d == torch.bool:
        return torch.rand(3, 5, generator=g) > 0.5
    if d.is_complex:
        return torch.randn(3, 5, generator=g, dtype=d)
    if d.is_floating_point:
        return (torch.randn(3, 5, generator=g) * 100).to(d)
    info = torch.iinfo(d)
    return torch.randint(info.min, info.max, (3, 5), generator=g, dtype=d)


@case(SUITE, "roundtrip", 1, dtypes=DTYPES, surfaces=("aten::_to_copy", "aten::copy_"))
def roundtrip(device: str, dtype: str | None) -> dict[str, Any]:
    """CPU -> device -> CPU returns the same values, dtype and shape, bit for bit."""
    x = _sample(dtype or "float32")
    on = x.to(device)
    return {
        "dtype": str(on.dtype),
        "on_device": on.device.type == torch.device(device).type,
        "back": on.to("cpu"),
    }


@case(SUITE, "noncontiguous_roundtrip", 2, dtypes=("float32", "int64"))
def noncontiguous_roundtrip(device: str, dtype: str | None) -> dict[str, Any]:
    """Copying a transposed or sliced CPU tensor to the device keeps its values."""
    x = _sample(dtype or "float32")
    return {"t": x.t().to(device).to("cpu"), "s": x[:, ::2].to(device).to("cpu")}


@case(SUITE, "copy_into_device_slice", 2, surfaces=("aten::copy_",))
def copy_into_device_slice(device: str, dtype: str | None) -> dict[str, Any]:
    """copy_ from CPU into a strided slice of a device tensor writes only that slice."""
    dst = torch.zeros(4, 6, device=device)
    dst[:, 1::2].copy_(torch.arange(12, dtype=torch.float32).reshape(4, 3))
    return {"dst": dst}


@case(SUITE, "casts_on_device", 2, dtypes=("float32",), surfaces=("aten::_to_copy",))
def casts_on_device(device: str, dtype: str | None) -> dict[str, Any]:
    """dtype casts on the device truncate, round and saturate like CPU."""
    x = torch.tensor([-2.7, -0.5, 0.0, 0.5, 1.5, 2.5, 300.0]).to(device)
    return {
        "int32": x.to(torch.int32),
        "bool": x.to(torch.bool),
        "half": x.to(torch.float16),
        "bf16": x.to(torch.bfloat16),
        "float64": x.to(torch.float64),
    }


@case(SUITE, "cross_device_cast_copy", 3, dtypes=("float32",))
def cross_device_cast_copy(device: str, dtype: str | None) -> dict[str, Any]:
    """x.to(device, dtype) casts and moves in one call; non_blocking copies complete."""
    x = torch.linspace(-3, 3, 7)
    moved = x.to(device, torch.float64)
    nb = x.to(device, non_blocking=True)
    back = nb.to("cpu", non_blocking=True)
    if hasattr(torch, device) and hasattr(getattr(torch, device), "synchronize"):
        getattr(torch, device).synchronize()
    return {"moved": moved, "back": back}


@case(SUITE, "large_roundtrip", 7, dtypes=("float32",))
def large_roundtrip(device: str, dtype: str | None) -> dict[str, Any]:
    """A 16M-element tensor survives the round trip (stress)."""
    x = torch.arange(1 << 24, dtype=torch.float32)
    back = x.to(device).to("cpu")
    return {"equal": bool(torch.equal(back, x)), "sum": float(back.sum())}


CASES = (
    roundtrip,
    noncontiguous_roundtrip,
    copy_into_device_slice,
    casts_on_device,
    cross_device_cast_copy,
    large_roundtrip,
)
