"""What the runner needs of a device, behind one small interface (`DeviceAdapter`).

The runner meets six kinds of device: the host (``cpu``, ``meta``), CUDA and ROCm
(both ``torch.cuda``), Apple MPS, Intel XPU, and any out-of-tree backend that registers
a ``torch.<name>`` module (PrivateUse1, such as simdev). They differ in five things the
runner cares about, and each is one method here, implemented once for the generic
``torch.<name>`` module and overridden only where a family differs
(`torchcts_runner.device_families`):

- `synchronize`: wait for the device's queued work, so that a case's duration and the
  comparison that follows see finished results, and an asynchronous device error is
  raised while the case is still the device's (not later, while judging it);
- `memory_stats`: allocated and peak bytes where the module offers them;
- `environment`, `runtime_modifications`, `prepare_environment`: the variables the
  family reads, recorded; what changes a backend's behaviour labelled; defaults set on
  purpose rather than inherited by accident;
- `hardware_key`: which kind of machine a result belongs to, never whose;
- `device_count` and `pin`: one device per xdist worker on a multi-device host
  (`torchcts_runner.device_pinning`).

Nothing here imports torch at import time: the module is found on first use (tests
pass a fake ``torch``). Cases that call ``synchronize`` themselves (a ``non_blocking``
copy in the copies suite) exercise the backend's own API as a user writes it; the
harness's waits go through the adapter.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping, MutableMapping
from typing import Any, ClassVar

from torchcts_schema import slug

_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_.:=+-]+")
MAX_LABEL = 80  # the evidence store's label limit


def _ram_gb() -> int:
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
        return max(1, round(pages * size / 2**30))
    except (ValueError, OSError, AttributeError):
        return 0


def host_hardware_key() -> str:
    """``<arch>-<N>cpu-<M>gb``: the key of a device that runs on the host CPU."""
    arch = platform.machine() or "unknown"
    cores = os.cpu_count() or 1
    ram = _ram_gb()
    return slug(f"{arch}-{cores}cpu-{ram}gb" if ram else f"{arch}-{cores}cpu")


def properties_key(module: Any) -> str:
    """``<model>-<N>gb`` from device 0's properties (name and total memory)."""
    props = module.get_device_properties(0)
    memory = round(getattr(props, "total_memory", 0) / 1e9)
    return slug(f"{props.name}-{memory}gb" if memory else str(props.name))


def modification_label(name: str, value: str) -> str:
    """``NAME=value`` as a path-free label (characters the evidence store refuses
    become ``-``, and the label is cut to its limit)."""
    return _LABEL_UNSAFE.sub("-", f"{name}={value}")[:MAX_LABEL]


class DeviceAdapter:
    """A device family's synchronize, memory statistics, environment, hardware key
    and device pinning, through its ``torch.<device>`` module.

    This base class is the generic path: an out-of-tree PrivateUse1 backend (its
    module is ``torch.<the backend's own name>``) uses it as it is. A method the
    module lacks the means for does nothing (synchronize) or reports nothing
    (memory).
    """

    family: ClassVar[str] = "privateuse1"
    # variables the family reads that change what a case does or how it fails;
    # `environment` records those set (TORCHCTS_<DEVICE>_* and PYTORCH_* always are)
    environment_names: ClassVar[tuple[str, ...]] = ()
    # of those, the ones whose value is a runtime modification when set
    modifying_names: ClassVar[tuple[str, ...]] = ()
    # record field -> the module's function returning bytes
    memory_functions: ClassVar[tuple[tuple[str, str], ...]] = (
        ("allocated_bytes", "memory_allocated"),
        ("peak_allocated_bytes", "max_memory_allocated"),
    )

    def __init__(self, device: str, torch: Any = None) -> None:
        self.device = device
        self._torch = torch

    @property
    def torch(self) -> Any:
        """The torch module (imported on first use, or the one given)."""
        if self._torch is None:
            import torch

            self._torch = torch
        return self._torch

    @property
    def module(self) -> Any:
        """``torch.<device>``, or None when nothing registered it (yet)."""
        return getattr(self.torch, self.device, None)

    def is_available(self) -> bool:
        """Whether this process can use the device."""
        module = self.module
        available = getattr(module, "is_available", None)
        return bool(available()) if callable(available) else module is not None

    def synchronize(self) -> None:
        """Wait for the current device's queued work; its errors are raised here."""
        sync = getattr(self.module, "synchronize", None)
        if callable(sync):
            sync()

    def device_count(self) -> int:
        """How many devices this process sees (1 when the module does not say)."""
        count = getattr(self.module, "device_count", None)
        return max(1, int(count())) if callable(count) else 1

    def pin(self, index: int) -> None:
        """Make device `index` this process's current device."""
        set_device = getattr(self.module, "set_device", None)
        if callable(set_device):
            set_device(index)
        elif index:
            raise RuntimeError(f"torch.{self.device} has no set_device")

    def memory_stats(self) -> dict[str, int]:
        """Allocated and peak bytes on the current device, where the module offers
        them (cheap counters; nothing is measured for it). Never raises."""
        module = self.module
        out = {}
        for field, name in self.memory_functions:
            read = getattr(module, name, None)
            try:
                if callable(read):
                    out[field] = int(read())
            except Exception:  # a device that broke: its counters are no evidence
                continue
        return out

    def hardware_key(self) -> str:
        """The host's key. An out-of-tree backend's module exists only once the
        backend is imported, which the controller never does (a backend may crash
        at import), so its device properties cannot decide a key that every
        process must compute alike."""
        return host_hardware_key()

    def prepare_environment(self, environ: MutableMapping[str, str]) -> None:
        """Set the family's defaults in `environ` before torch initialises the
        device (only where a default differs from what an unset variable means)."""

    def environment_prefixes(self) -> tuple[str, ...]:
        """Prefixes of the variables the backend reads: an out-of-tree backend's are
        named after it (``XLA_FLAGS``, ``SIMDEV_...``)."""
        return (f"{self.device.upper()}_",)

    def environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The family's variables set in `environ`, by name."""
        names = set(self.environment_names)
        prefixes = self.environment_prefixes()
        if prefixes:
            names.update(n for n in environ if n.startswith(prefixes))
        return {n: environ[n] for n in sorted(names) if n in environ}

    def runtime_modifications(self, environ: Mapping[str, str]) -> list[str]:
        """``NAME=value`` labels for the variables that change the backend's
        behaviour, as the evidence store records them."""
        return [
            modification_label(n, environ[n])
            for n in sorted(self.modifying_names)
            if n in environ
        ]

    def describe(self, environ: Mapping[str, str]) -> dict[str, Any]:
        """The family and device, for the run metadata."""
        return {"family": self.family, "device": self.device}


class HostAdapter(DeviceAdapter):
    """``cpu`` and ``meta``: nothing is queued, nothing to pin, the host's key.

    The variable that picks the CPU kernels (and so the values) is recorded.
    """

    family = "host"
    environment_names = ("ATEN_CPU_CAPABILITY",)
    modifying_names = ("ATEN_CPU_CAPABILITY",)

    def environment_prefixes(self) -> tuple[str, ...]:
        """None: the host's variables are named, not prefixed."""
        return ()

    def synchronize(self) -> None:
        """The host runs ops as they are called."""

    def device_count(self) -> int:
        """One host."""
        return 1

    def pin(self, index: int) -> None:
        """Nothing to pin."""

    def memory_stats(self) -> dict[str, int]:
        """The host's memory is the process's, not a device's."""
        return {}

    def hardware_key(self) -> str:
        """The host's key."""
        return host_hardware_key()


__all__ = [
    "DeviceAdapter",
    "HostAdapter",
    "host_hardware_key",
    "modification_label",
    "properties_key",
]
