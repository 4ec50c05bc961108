"""The hardware key and run key: which machine a result belongs to, never whose.

The key comes from device properties (model, memory, core count, CPU architecture) so
two runs on the same kind of hardware share a run key; the host name, user name and
paths never enter it. Each family computes its own (`DeviceAdapter.hardware_key`).
"""

from __future__ import annotations

from torchcts_schema import make_run_key

from torchcts_runner.device_adapter import host_hardware_key
from torchcts_runner.device_families import ACCELERATORS, adapter_for

cpu_hardware_key = host_hardware_key  # the key of devices that run on the host CPU


def hardware_key(device: str) -> str:
    """The hardware key for `device` (a device type such as 'cuda' or 'simdev')."""
    return adapter_for(device).hardware_key()


def run_key_for(device: str, hw_key: str | None = None) -> str:
    """``<device>_<hardware key>``."""
    return make_run_key(device, hw_key or hardware_key(device))


def best_device() -> tuple[str, str]:
    """The best device present and why: cuda > mps > xpu > simdev (demo profile)."""
    try:
        import torch  # noqa: F401  (the adapters import it; here only its absence)
    except ImportError:  # pragma: no cover - torch is a dependency
        return "simdev", "torch is not importable: running simdev"
    names = {"cuda": "CUDA device", "mps": "Apple MPS", "xpu": "Intel XPU"}
    for device in ACCELERATORS:
        adapter = adapter_for(device)
        if adapter.is_available():
            found = names[device]
            if device == "cuda":
                found += f" {adapter.module.get_device_name(0)!r}"
            return device, f"found {found}: running {device}"
    return (
        "simdev",
        "no accelerator found: running simdev with the demo fault profile",
    )


__all__ = ["best_device", "cpu_hardware_key", "hardware_key", "run_key_for"]
