"""The hardware key and run key: which machine a result belongs to, never whose.

The key comes from device properties (model, memory, core count, CPU architecture) so
two runs on the same kind of hardware share a run key; the host name, user name and
paths never enter it.
"""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any

from torchcts_schema import make_run_key, slug

_ACCELERATORS = ("cuda", "mps", "xpu")


def _ram_gb() -> int:
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
        return max(1, round(pages * size / 2**30))
    except (ValueError, OSError, AttributeError):
        return 0


def cpu_hardware_key() -> str:
    """``<arch>-<N>cpu-<M>gb`` for devices that run on the host CPU."""
    arch = platform.machine() or "unknown"
    cores = os.cpu_count() or 1
    ram = _ram_gb()
    return slug(f"{arch}-{cores}cpu-{ram}gb" if ram else f"{arch}-{cores}cpu")


def _sysctl(name: str) -> str:
    try:
        out = subprocess.run(
            ["sysctl", "-n", name], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def _gpu_key(torch: Any, device: str) -> str:
    module = getattr(torch, device)
    props = module.get_device_properties(0)
    memory = round(getattr(props, "total_memory", 0) / 1e9)
    return slug(f"{props.name}-{memory}gb" if memory else str(props.name))


def hardware_key(device: str) -> str:
    """The hardware key for `device` (a device type such as 'cuda' or 'simdev')."""
    if device in ("cuda", "xpu"):
        import torch

        module = getattr(torch, device, None)
        if module is not None and module.is_available():
            return _gpu_key(torch, device)
        return slug(f"no-{device}-{cpu_hardware_key()}")
    if device == "mps":
        chip = _sysctl("machdep.cpu.brand_string") or platform.processor() or "apple"
        memory = _sysctl("hw.memsize")
        gb = round(int(memory) / 2**30) if memory.isdigit() else 0
        return slug(f"{chip}-{gb}gb" if gb else chip)
    return cpu_hardware_key()


def run_key_for(device: str, hw_key: str | None = None) -> str:
    """``<device>_<hardware key>``."""
    return make_run_key(device, hw_key or hardware_key(device))


def best_device() -> tuple[str, str]:
    """The best device present and why: cuda > mps > xpu > simdev (demo profile)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return "simdev", "torch is not importable: running simdev"
    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        return "cuda", f"found CUDA device {name!r}: running cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps", "found Apple MPS: running mps"
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return "xpu", "found Intel XPU: running xpu"
    return (
        "simdev",
        "no accelerator found: running simdev with the demo fault profile",
    )


__all__ = ["best_device", "cpu_hardware_key", "hardware_key", "run_key_for"]
