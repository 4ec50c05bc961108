"""Device-mismatch errors: mixing CPU and device tensors raises, except where PyTorch
allows it (0-dim CPU tensors as scalars, explicit copies). Meaningless on CPU itself.
"""

from __future__ import annotations

from typing import Any

import torch
from torchcts_schema import ExpectedSource

from torchcts_cases.suites.base import case

SUITE = "device_mismatch"


def _raised(fn: Any) -> str | None:
    try:
        fn()
    except (RuntimeError, TypeError, ValueError, NotImplementedError) as exc:
        return type(exc).__name__
    return None


def _reviewed_mismatch(dtype: str | None) -> dict[str, Any]:
    return {"binary": "RuntimeError", "matmul": "RuntimeError", "out": "RuntimeError"}


@case(
    SUITE,
    "mixed_operands_raise",
    1,
    source=ExpectedSource.REVIEWED_REFERENCE,
    expected=_reviewed_mismatch,
    needs_other_device=True,
    surfaces=("aten::add.Tensor", "aten::mm"),
)
def mixed_operands_raise(device: str, dtype: str | None) -> dict[str, Any]:
    """cpu + device (non-scalar), mm across devices and a foreign out= all raise."""
    dev = torch.ones(3, device=device)
    cpu = torch.ones(3)
    return {
        "binary": _raised(lambda: dev + cpu),
        "matmul": _raised(lambda: torch.mm(dev.view(3, 1), cpu.view(1, 3))),
        "out": _raised(lambda: torch.add(dev, dev, out=torch.empty(3))),
    }


@case(
    SUITE,
    "cpu_scalar_tensor_allowed",
    2,
    needs_other_device=True,
    surfaces=("aten::add.Tensor",),
)
def cpu_scalar_tensor_allowed(device: str, dtype: str | None) -> dict[str, Any]:
    """A 0-dim CPU tensor combines with a device tensor and the result stays on it."""
    dev = torch.tensor([1.0, 2.0, 3.0]).to(device)
    result = dev + torch.tensor(2.0)
    return {"sum": result, "on_device": result.device.type == torch.device(device).type}


@case(SUITE, "index_device_rules", 3, needs_other_device=True)
def index_device_rules(device: str, dtype: str | None) -> dict[str, Any]:
    """Indexing a device tensor with a device index works and keeps the device."""
    dev = torch.arange(10, dtype=torch.float32).to(device)
    idx = torch.tensor([0, 3, 9]).to(device)
    picked = dev[idx]
    return {
        "picked": picked,
        "on_device": picked.device.type == torch.device(device).type,
    }


def _reviewed_second(dtype: str | None) -> dict[str, Any]:
    return {
        "index": 1,
        "values": torch.arange(6, dtype=torch.float32),
        "mixed": "RuntimeError",
    }


@case(
    SUITE,
    "second_device",
    5,
    min_devices=2,
    needs_other_device=True,
    source=ExpectedSource.REVIEWED_REFERENCE,
    expected=_reviewed_second,
)
def second_device(device: str, dtype: str | None) -> dict[str, Any]:
    """With two devices, copies between device:0 and device:1 keep values; mixing raises."""
    a = torch.arange(6, dtype=torch.float32).to(f"{device}:0")
    b = a.to(f"{device}:1")
    return {
        "index": b.device.index,
        "values": b,
        "mixed": _raised(lambda: a + b),
    }


CASES = (
    mixed_operands_raise,
    cpu_scalar_tensor_allowed,
    index_device_rules,
    second_device,
)
