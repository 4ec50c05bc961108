"""The device families that differ from the generic ``torch.<name>`` path, and
`adapter_for`, the one way the runner gets a `DeviceAdapter`.

- CUDA and ROCm share ``torch.cuda`` (ROCm builds set ``torch.version.hip``); their
  launch-blocking and TF32 variables are recorded and labelled, never set for the user.
- MPS has one device and no peak counter; ``PYTORCH_ENABLE_MPS_FALLBACK`` is set to
  ``0`` unless the user set it, and its value is always a runtime modification: with
  the fallback on, ops Metal lacks compute on the CPU.
- XPU is CUDA-like (``torch.xpu``) with Level Zero's variables.
- Any other device type is an out-of-tree backend, most often PrivateUse1 under its
  own name (simdev): the generic `DeviceAdapter`.
"""

from __future__ import annotations

import platform
import re
import subprocess
from collections.abc import Mapping, MutableMapping
from typing import Any

from torchcts_schema import slug

from torchcts_runner.device_adapter import (
    DeviceAdapter,
    HostAdapter,
    host_hardware_key,
    properties_key,
)

MPS_FALLBACK = "PYTORCH_ENABLE_MPS_FALLBACK"
_INDICES = re.compile(r"[0-9,. ]*")  # visible devices by index (XPU: "0.1"), not id


class _GpuAdapter(DeviceAdapter):
    """A family whose module describes its devices and can change the current one."""

    family = "gpu"
    visible_names: tuple[str, ...] = ()  # visible-devices variables

    def hardware_key(self) -> str:
        """Device 0's model and memory; ``no-<device>-<host key>`` without one."""
        if self.is_available():
            return properties_key(self.module)
        return slug(f"no-{self.device}-{host_hardware_key()}")

    def environment_prefixes(self) -> tuple[str, ...]:
        """None: the family's variables are named."""
        return ()

    def describe(self, environ: Mapping[str, str]) -> dict[str, Any]:
        """Family, device, how many devices this process sees and which ones it was
        shown. The visible-devices variables are recorded here, not with the
        environment that --resume compares: which card of a model ran a shard does
        not change what its cases mean. A list of device UUIDs (which name one
        machine's cards) keeps only its length."""
        count = self.device_count() if self.is_available() else 0
        out = {**super().describe(environ), "device_count": count}
        visible = {}
        for name in self.visible_names:
            value = environ.get(name)
            if value is not None and not _INDICES.fullmatch(value):
                value = f"{len(value.split(','))} device id(s)"
            if value is not None:
                visible[name] = value
        return {**out, "visible_devices": visible} if visible else out


class CudaAdapter(_GpuAdapter):
    """``torch.cuda``: NVIDIA CUDA, or AMD ROCm on a HIP build."""

    family = "cuda"
    visible_names = (
        "CUDA_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
    )
    environment_names = (
        "CUDA_LAUNCH_BLOCKING",  # errors raised at the failing launch, not later
        "CUDA_DEVICE_ORDER",
        "CUDA_MODULE_LOADING",
        "CUBLAS_WORKSPACE_CONFIG",  # deterministic cuBLAS reductions
        "NVIDIA_TF32_OVERRIDE",  # forces TF32 on or off under the library's choice
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        "TORCH_USE_CUDA_DSA",
        "HIP_LAUNCH_BLOCKING",
        "AMD_SERIALIZE_KERNEL",
        "HSA_OVERRIDE_GFX_VERSION",  # runs kernels built for another GPU
        "MIOPEN_FIND_MODE",
    )
    modifying_names = (
        "CUDA_LAUNCH_BLOCKING",
        "CUBLAS_WORKSPACE_CONFIG",
        "NVIDIA_TF32_OVERRIDE",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        "HIP_LAUNCH_BLOCKING",
        "AMD_SERIALIZE_KERNEL",
        "HSA_OVERRIDE_GFX_VERSION",
    )

    def describe(self, environ: Mapping[str, str]) -> dict[str, Any]:
        """Also the toolkit the torch build targets (ROCm's HIP, or CUDA)."""
        version = getattr(self.torch, "version", None)
        hip = getattr(version, "hip", None)
        out = super().describe(environ)
        if hip:
            return {**out, "family": "rocm", "hip_version": str(hip)}
        cuda = getattr(version, "cuda", None)
        return {**out, "cuda_version": str(cuda) if cuda else None}


class XpuAdapter(_GpuAdapter):
    """``torch.xpu``: Intel GPUs through Level Zero."""

    family = "xpu"
    visible_names = ("ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR")
    environment_names = (
        "ZE_FLAT_DEVICE_HIERARCHY",
        "SYCL_PI_LEVEL_ZERO_USE_IMMEDIATE_COMMANDLISTS",
    )


class MpsAdapter(DeviceAdapter):
    """``torch.mps``: one Apple GPU sharing the host's memory."""

    family = "mps"
    environment_names = (
        MPS_FALLBACK,
        "PYTORCH_MPS_FAST_MATH",
        "PYTORCH_MPS_PREFER_METAL",
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
    )
    modifying_names = (
        MPS_FALLBACK,
        "PYTORCH_MPS_FAST_MATH",
        "PYTORCH_MPS_PREFER_METAL",
    )
    memory_functions = (
        ("allocated_bytes", "current_allocated_memory"),
        ("driver_allocated_bytes", "driver_allocated_memory"),
    )

    def is_available(self) -> bool:
        """``torch.backends.mps`` says (``torch.mps`` exists on every build)."""
        mps = getattr(getattr(self.torch, "backends", None), "mps", None)
        return bool(mps is not None and mps.is_available())

    def environment_prefixes(self) -> tuple[str, ...]:
        """None: the family's variables are named."""
        return ()

    def prepare_environment(self, environ: MutableMapping[str, str]) -> None:
        """The CPU fallback off unless the user turned it on: a run measures Metal,
        and says so (torch reads the variable when it is imported)."""
        environ.setdefault(MPS_FALLBACK, "0")

    def hardware_key(self) -> str:
        """The chip and the machine's memory (MPS has no device properties)."""
        chip = _sysctl("machdep.cpu.brand_string") or platform.processor() or "apple"
        memory = _sysctl("hw.memsize")
        gb = round(int(memory) / 2**30) if memory.isdigit() else 0
        return slug(f"{chip}-{gb}gb" if gb else chip)


def _sysctl(name: str) -> str:
    try:
        out = subprocess.run(
            ["sysctl", "-n", name], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


_FAMILIES: dict[str, type[DeviceAdapter]] = {
    "cpu": HostAdapter,
    "meta": HostAdapter,
    "cuda": CudaAdapter,
    "mps": MpsAdapter,
    "xpu": XpuAdapter,
}
ACCELERATORS = ("cuda", "mps", "xpu")  # best first, for --best-device


def adapter_for(device: str, torch: Any = None) -> DeviceAdapter:
    """The adapter of `device` (a device type, or ``type:index``); any type not
    built in is an out-of-tree backend on the generic path. `torch` replaces the
    real module (tests)."""
    kind = device.split(":", 1)[0]
    return _FAMILIES.get(kind, DeviceAdapter)(kind, torch)


__all__ = [
    "ACCELERATORS",
    "MPS_FALLBACK",
    "CudaAdapter",
    "MpsAdapter",
    "XpuAdapter",
    "adapter_for",
]
