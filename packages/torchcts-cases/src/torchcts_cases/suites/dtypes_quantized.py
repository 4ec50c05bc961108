"""Opaque bit containers (torch.bits8, torch.bits16) and affine-quantized tensors
(quint8, qint8, qint32) on the device (suite ``dtypes``).

Each is a capability of its own: ``bits_dtypes`` (storage that only moves, for
formats PyTorch does not interpret: views, copies, cat, slicing; the CPU has no
arithmetic, comparison or conversion kernel for it) and ``quantized`` (tensors that
carry a scale and zero point, which a backend implements as its own quantized
dispatch key and kernels). Neither depends on DTYPES: their dtypes are not in it.
Observations are plain tensors (bytes, integer representations, dequantized values)
judged exactly, since neither container has a tolerance of its own. torch 2.13
deprecates the quantized tensor creation functions (they warn that they will be
removed); the checks silence that warning, the capability stays until they go.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from torchcts_cases.suites.base import case, storage_id

SUITE = "dtypes"


def _container(raw: torch.Tensor, bits: torch.dtype, device: str) -> dict[str, Any]:
    """What a device does with one bits container over `raw`'s bytes."""
    source = raw.to(device)
    on = source.view(bits)
    grid = on.reshape(4, -1)
    plain = raw.dtype
    return {
        "dtype": str(on.dtype),
        "element_size": on.element_size(),
        "shares_storage": storage_id(on) == storage_id(source),
        "clone": on.clone().view(plain),
        "cat": torch.cat([on, on[:4]]).view(plain),
        "slice": on[3:9].view(plain),
        "transposed": grid.t().contiguous().view(plain),
        "copy_": torch.empty_like(on).copy_(on).view(plain),
        "host": on.cpu().view(plain),
        "zeros": torch.zeros(3, dtype=bits, device=device).view(plain),
    }


@case(
    SUITE,
    "bits_containers",
    4,
    capability="bits_dtypes",
    surfaces=("aten::clone", "aten::cat", "aten::copy_"),
)
def bits_containers(device: str, dtype: str | None) -> dict[str, Any]:
    """torch.bits8 and torch.bits16 views of device bytes clone, cat, slice, copy,
    transpose and come back to the host with every bit unchanged."""
    raw8 = ((torch.arange(32) * 37 + 11) % 256).to(torch.uint8)
    raw16 = (torch.arange(32) * 2003 - 30000).to(torch.int16)
    return {
        "bits8": _container(raw8, torch.bits8, device),
        "bits16": _container(raw16, torch.bits16, device),
    }


@contextmanager
def _deprecated_creation() -> Iterator[None]:
    """Silence torch's deprecation warning of quantized tensor creation."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        yield


def _quantized(q: torch.Tensor) -> dict[str, Any]:
    """A per-tensor quantized tensor as plain observations."""
    return {
        "dtype": str(q.dtype),
        "qscheme": str(q.qscheme()),
        "scale": q.q_scale(),
        "zero_point": q.q_zero_point(),
        "int_repr": q.int_repr(),
        "dequantized": q.dequantize(),
    }


_INPUTS = [-1.0, 0.0, 0.25, 0.75, 1.25, 1.3, 100.0, -100.0]


@case(
    SUITE,
    "quantize_per_tensor",
    4,
    capability="quantized",
    surfaces=("aten::quantize_per_tensor", "aten::int_repr"),
)
def quantize_per_tensor(device: str, dtype: str | None) -> dict[str, Any]:
    """quantize_per_tensor into quint8, qint8 and qint32 on the device: x / scale +
    zero_point rounded half to even (3.5 -> 4, 4.5 -> 4), saturated at the type's
    range; scale, zero point, integer representation and dequantized values."""
    x = torch.tensor(_INPUTS).to(device)
    out = {}
    for qdtype in (torch.quint8, torch.qint8, torch.qint32):
        with _deprecated_creation():
            q = torch.quantize_per_tensor(x, 0.5, 3, qdtype)
        out[str(qdtype).removeprefix("torch.")] = _quantized(q)
    return out


@case(
    SUITE,
    "quantized_tensors",
    5,
    capability="quantized",
    surfaces=("aten::quantize_per_channel", "aten::relu"),
)
def quantized_tensors(device: str, dtype: str | None) -> dict[str, Any]:
    """Quantized tensors on the device keep their parameters through reshape,
    slicing, clone, cat and relu; per-channel quantization; a CPU quantized tensor
    moved to the device and back keeps every integer."""
    x = torch.tensor(_INPUTS).to(device)
    w = torch.tensor([[0.1, -0.5, 0.9], [2.0, -3.0, 0.26]]).to(device)
    scales = torch.tensor([0.1, 0.02], dtype=torch.float64).to(device)
    points = torch.tensor([0, 1]).to(device)
    with _deprecated_creation():
        q = torch.quantize_per_tensor(x, 0.5, 3, torch.quint8)
        per_channel = torch.quantize_per_channel(w, scales, points, 0, torch.qint8)
        host = torch.quantize_per_tensor(torch.tensor(_INPUTS), 0.25, 10, torch.qint8)
    moved = host.to(device)
    return {
        "is_quantized": [q.is_quantized, moved.is_quantized],
        "reshape": _quantized(q.reshape(2, 4)),
        "slice": _quantized(q[2:5]),
        "clone": _quantized(q.clone()),
        "cat": _quantized(torch.cat([q, q])),
        "relu": _quantized(torch.relu(q)),
        "per_channel": {
            "qscheme": str(per_channel.qscheme()),
            "scales": per_channel.q_per_channel_scales(),
            "zero_points": per_channel.q_per_channel_zero_points(),
            "axis": per_channel.q_per_channel_axis(),
            "int_repr": per_channel.int_repr(),
            "dequantized": per_channel.dequantize(),
        },
        "moved": _quantized(moved),
        "back_on_host": _quantized(moved.cpu()),
    }


CASES = (bits_containers, quantize_per_tensor, quantized_tensors)
