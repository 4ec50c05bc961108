"""The ``torch.simdev`` module: availability, device count, synchronize, autocast
dtypes, simdev's own RNG and memory statistics.

simdev keeps a generator separate from the CPU default one, as a real device does, so
that CPU reference computations do not advance the device's random stream.
``torch.manual_seed`` reaches it through ``manual_seed_all``. Memory statistics count
the CPU payloads live simdev storages hold (memory_stats.py).

Not here, because a Python backend cannot provide them: ``torch.Generator(device=
"simdev")`` (PyTorch asks the C++ PrivateUse1HooksInterface for ``getNewGenerator``;
the Python hooks expose only is_available, has_primary_context and is_built), streams
and events (a torch.Stream needs stream functions in the device guard, and the Python
guard has none; simdev runs every op synchronously anyway) and device properties
(simdev has no memory of its own to report: payloads are host memory).
"""

from __future__ import annotations

import torch

from torchcts_simdev.memory_stats import STATS

GENERATOR = torch.Generator()
# device faults a profile turned on (profile.DEVICE_FAULTS); set by `set_device_faults`
_FAULTS: set[str] = set()


def set_device_faults(kinds: frozenset[str]) -> None:
    """Turn on exactly `kinds` (a profile's device faults), off every other one."""
    _FAULTS.clear()
    _FAULTS.update(kinds)
    STATS.count_frees = "uncounted_free" not in kinds


class _DeviceContext:
    """``torch.simdev.device(i)``: there is one device, so entering changes nothing."""

    def __init__(self, device: object) -> None:
        self.device = device

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class SimdevModule:
    """What PyTorch looks up as ``torch.simdev`` for a PrivateUse1 backend."""

    device = _DeviceContext

    @staticmethod
    def is_available() -> bool:
        """simdev runs anywhere torch runs."""
        return True

    @staticmethod
    def is_initialized() -> bool:
        """Registration happens at import, so it is always initialized."""
        return True

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def device_count() -> int:
        """simdev exposes exactly one device, ``simdev:0`` (the ``phantom_device``
        fault counts a second one that does not exist)."""
        return 2 if "phantom_device" in _FAULTS else 1

    @staticmethod
    def current_device() -> int:
        """The only device index."""
        return 0

    @staticmethod
    def set_device(device: int) -> None:
        """Accept index 0 only, like a one-device machine."""
        if int(device) != 0:
            raise RuntimeError(f"simdev: invalid device index {device} (only 0 exists)")

    @staticmethod
    def synchronize(device: object = None) -> None:
        """simdev runs ops synchronously; nothing to wait for."""

    @staticmethod
    def get_amp_supported_dtype() -> list[torch.dtype]:
        """Autocast dtypes (``torch.autocast("simdev")``; see autocast.py)."""
        return [torch.float16, torch.bfloat16]

    @staticmethod
    def manual_seed(seed: int) -> None:
        """Seed simdev's generator."""
        GENERATOR.manual_seed(int(seed))

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        """Seed simdev's generator (called by ``torch.manual_seed``)."""
        GENERATOR.manual_seed(int(seed))

    @staticmethod
    def seed() -> int:
        """Seed simdev's generator non-deterministically."""
        return GENERATOR.seed()

    @staticmethod
    def initial_seed() -> int:
        """The seed simdev's generator last got."""
        return GENERATOR.initial_seed()

    @staticmethod
    def get_rng_state(device: object = None) -> torch.Tensor:
        """simdev's generator state (a CPU byte tensor, as for other devices)."""
        return GENERATOR.get_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, device: object = None) -> None:
        """Restore simdev's generator state."""
        GENERATOR.set_state(state)

    @staticmethod
    def memory_allocated(device: object = None) -> int:
        """Bytes of payload live simdev storages hold."""
        return STATS.current

    @staticmethod
    def max_memory_allocated(device: object = None) -> int:
        """The most `memory_allocated` has been since the last peak reset."""
        return STATS.peak

    @staticmethod
    def reset_peak_memory_stats(device: object = None) -> None:
        """Start the peak again from what is allocated now."""
        STATS.reset_peak()

    @staticmethod
    def empty_cache() -> None:
        """simdev caches nothing: a payload is freed with its last storage."""
