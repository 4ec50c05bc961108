"""simdev's memory statistics: the bytes of CPU payload that live simdev storages hold.

simdev has no allocator of its own: a payload is a CPU storage, freed with the last
simdev storage over it, and nothing is cached. So what a caching allocator reports as
``memory_allocated`` is here the size of every live payload, each counted once however
many simdev storages share it, and ``max_memory_allocated`` the peak of that since the
last reset. ``empty_cache`` has nothing to release. Storages die on the autograd
engine's device thread too, hence the lock.

The ``uncounted_free`` fault (a profile rule on ``simdev::memory_allocated``) leaves a
freed payload counted, as an allocator whose statistics miss frees would.
"""

from __future__ import annotations

import threading

import torch


class MemoryStats:
    """Live payload bytes and their peak; `hold` and `release` pair per storage."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.count_frees = True  # False under the uncounted_free fault
        self._holders: dict[int, int] = {}  # payload identity -> simdev storages
        self._sizes: dict[int, int] = {}  # payload identity -> bytes counted
        self._lock = threading.Lock()

    def hold(self, payload: torch.UntypedStorage) -> None:
        """A simdev storage now holds `payload` (a resized payload counts anew)."""
        key, size = payload._cdata, payload.nbytes()
        with self._lock:
            self._holders[key] = self._holders.get(key, 0) + 1
            self.current += size - self._sizes.get(key, 0)
            self._sizes[key] = size
            self.peak = max(self.peak, self.current)

    def release(self, payload: torch.UntypedStorage) -> None:
        """A simdev storage holding `payload` died; the last one frees its bytes."""
        key = payload._cdata
        with self._lock:
            left = self._holders.get(key, 0) - 1
            if left > 0:
                self._holders[key] = left
                return
            self._holders.pop(key, None)
            size = self._sizes.pop(key, 0)
            if self.count_frees:
                self.current -= size

    def reset_peak(self) -> None:
        """The peak starts again from what is held now."""
        with self._lock:
            self.peak = self.current


STATS = MemoryStats()
