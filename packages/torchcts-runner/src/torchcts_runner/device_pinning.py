"""One device per xdist worker on a host with several: worker ``gw<i>`` uses device
index ``i mod device_count``.

Pinning makes that device the process's current one (``torch.<device>.set_device``),
so every case that names the bare device type (``"cuda"``) runs there, and the
health probe after a case probes it. It does not hide the other devices (as a
visible-devices variable would): a case the manifest's ``DEVICE_COUNT`` admits that
uses ``cuda:0`` and ``cuda:1`` still sees both. ``-n`` says how many workers there
are, ``DEVICE_COUNT`` how many devices one case may use: ``-n`` equal to the device
count gives each device one worker, a multiple of it several. An isolation child
pins itself the same way from the worker id its payload names, so it runs on its
worker's device. A host with one device, and a run without xdist (``main``), change
nothing: no device is set.
"""

from __future__ import annotations

import re

from torchcts_runner.device_adapter import DeviceAdapter

_WORKER = re.compile(r"gw(\d+)")


def device_index_for(worker: str, device_count: int) -> int | None:
    """The device index of `worker` (``gw<i>``) among `device_count` devices; None
    when there is nothing to choose (one device, or no xdist worker)."""
    found = _WORKER.fullmatch(worker)
    if found is None or device_count <= 1:
        return None
    return int(found.group(1)) % device_count


def pin_worker(adapter: DeviceAdapter, worker: str) -> int | None:
    """Pin this process to `worker`'s device; the index, or None when nothing was
    pinned. Raises what the device module raises."""
    if _WORKER.fullmatch(worker) is None:
        return None  # never ask the device module in a process that pins nothing
    index = device_index_for(worker, adapter.device_count())
    if index is not None:
        adapter.pin(index)
    return index


__all__ = ["device_index_for", "pin_worker"]
