"""A backend module for the runner's tests only: importing it registers
``torch.fakedev``, a device module with ``FAKEDEV_COUNT`` devices (default 2),
memory counters that say which device is current, and a log of the runner's calls
(``FAKEDEV_LOG``: one ``<pid> <call> <device index>`` line each)."""

from __future__ import annotations

import os

import torch


def _log(call: str, index: int) -> None:
    path = os.environ.get("FAKEDEV_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {call} {index}\n")


class FakeDev:
    """What the runner's generic adapter looks up as ``torch.fakedev``."""

    current = 0

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def device_count() -> int:
        return int(os.environ.get("FAKEDEV_COUNT", "2"))

    @classmethod
    def set_device(cls, index: int) -> None:
        cls.current = index
        _log("set_device", index)

    @classmethod
    def synchronize(cls) -> None:
        _log("synchronize", cls.current)

    @classmethod
    def memory_allocated(cls) -> int:
        return 1000 * (cls.current + 1)

    @classmethod
    def max_memory_allocated(cls) -> int:
        return 5000 * (cls.current + 1)


torch.fakedev = FakeDev  # type: ignore[attr-defined]
