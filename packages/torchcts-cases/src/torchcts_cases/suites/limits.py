"""What a hand-written check may know of the manifest it runs under: how many devices
it may use and how much memory a case may take.

A check is ``check(device, dtype)``; the memory and device_api suites also need the
manifest's ``DEVICE_COUNT`` (every counted device must work) and ``RESOURCE_LIMITS``
``memory_mb`` (a large tensor must fit under it, an allocation meant to fail must
exceed it). The prepared case sets them here around both runs, so a check reads them
without its signature changing for every other suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from torchcts_schema import Manifest


@dataclass(frozen=True)
class RunLimits:
    """The manifest's DEVICE_COUNT and RESOURCE_LIMITS memory_mb (None: no cap).

    The runner enforces ``memory_mb`` on the device run as an address-space cap
    (``torchcts_isolate.memory_limit``), in process and in isolation alike.
    """

    device_count: int = 1
    memory_mb: int | None = None

    @classmethod
    def of(cls, manifest: Manifest) -> RunLimits:
        """The limits `manifest` declares."""
        memory = manifest.resource_limits.get("memory_mb")
        return cls(manifest.device_count, int(memory) if memory else None)


_LIMITS: ContextVar[RunLimits | None] = ContextVar("hand_case_limits", default=None)


def run_limits() -> RunLimits:
    """The limits of the running check's manifest (the defaults outside a run)."""
    return _LIMITS.get() or RunLimits()


@contextmanager
def limits_of(limits: RunLimits) -> Iterator[None]:
    """Checks called in this block see `limits`."""
    token = _LIMITS.set(limits)
    try:
        yield
    finally:
        _LIMITS.reset(token)
