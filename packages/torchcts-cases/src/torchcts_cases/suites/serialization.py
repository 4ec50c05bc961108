"""Serialization: torch.save / torch.load of device tensors round-trips."""

from __future__ import annotations

import io
from typing import Any

import torch

from torchcts_cases.suites.base import case, storage_id

SUITE = "serialization"


@case(SUITE, "save_load_roundtrip", 2, dtypes=("float32", "int64", "bool", "float16"))
def save_load_roundtrip(device: str, dtype: str | None) -> dict[str, Any]:
    """A saved device tensor loads back on the device, and with map_location='cpu'."""
    d = getattr(torch, dtype or "float32")
    x = torch.arange(12).reshape(3, 4).to(d).to(device)
    buf = io.BytesIO()
    torch.save(x, buf)
    buf.seek(0)
    same = torch.load(buf, weights_only=True)
    buf.seek(0)
    cpu = torch.load(buf, map_location="cpu", weights_only=True)
    return {
        "on_device": same.device.type == torch.device(device).type,
        "same": same,
        "cpu": cpu,
        "dtype": str(same.dtype),
    }


@case(SUITE, "shared_storage_preserved", 5)
def shared_storage_preserved(device: str, dtype: str | None) -> dict[str, Any]:
    """A base and its view saved together load back sharing one storage."""
    base = torch.arange(10, dtype=torch.float32).to(device)
    view = base[2:7]
    buf = io.BytesIO()
    torch.save({"base": base, "view": view}, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=True)
    loaded["base"][3] = -1.0
    return {
        "shared": storage_id(loaded["base"]) == storage_id(loaded["view"]),
        "view": loaded["view"],
        "offset": loaded["view"].storage_offset(),
    }


@case(SUITE, "state_dict_roundtrip", 5)
def state_dict_roundtrip(device: str, dtype: str | None) -> dict[str, Any]:
    """A module's state_dict on the device saves and loads back into a fresh module."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3).to(device)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    fresh = torch.nn.Linear(4, 3).to(device)
    fresh.load_state_dict(torch.load(buf, weights_only=True))
    x = torch.ones(2, 4).to(device)
    return {"out": fresh(x).detach(), "weight": fresh.weight.detach()}


CASES = (save_load_roundtrip, shared_storage_preserved, state_dict_roundtrip)
