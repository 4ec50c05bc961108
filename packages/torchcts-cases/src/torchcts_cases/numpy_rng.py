"""numpy's global (legacy) RNG state, saved and restored in microseconds where it can be.

A live sample pass saves the global RNG states after every sample and restores them
before the next (`sample_stream`). ``numpy.random.get_state`` and ``set_state`` copy
the 624-word Mersenne Twister key one element at a time: 65-70 us each, the larger part
of a pass's bookkeeping on every case, although OpInfo's generators hardly ever draw
from numpy. So a saved state also keeps the key and position as numpy holds them
(2.5 KB read through numpy's documented ``ctypes.state_address``, about 1 us):

- saving again after the pass advanced, an unchanged key and position (and no cached
  Gaussian in the earlier state) means numpy was not drawn from, so the earlier state
  is kept instead of calling ``get_state``: from a state without a cached Gaussian,
  every draw moves the position, and reseeding clears the cache;
- a state without a cached Gaussian is restored by reseeding (which clears the cache,
  3 us) and writing the key and position back.

Whether numpy keeps its state that way is checked once, against ``get_state`` and a
round trip of draws; where it does not (another numpy layout, another bit generator),
every save and restore uses ``get_state``/``set_state`` as before.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any

_KEY_WORDS = 624
_RAW_BYTES = _KEY_WORDS * 4 + 4  # uint32 key[624], then int pos


@dataclass(frozen=True, slots=True)
class NumpyRngState:
    """One saved state: numpy's own tuple, and its raw key and position when usable."""

    legacy: tuple[Any, ...]
    raw: bytes | None

    @property
    def clean(self) -> bool:
        """No Gaussian cached: the raw bytes are the whole state."""
        return self.raw is not None and self.legacy[3] == 0


def save_numpy_rng(previous: NumpyRngState | None = None) -> NumpyRngState | None:
    """The global numpy RNG's state (None where numpy is not imported); `previous`, a
    state restored just before, is returned itself when numpy was not drawn since."""
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None
    raw = _read_raw(numpy)
    if previous is not None and previous.clean and previous.raw == raw:
        return previous
    return NumpyRngState(tuple(numpy.random.get_state()), raw)


def restore_numpy_rng(state: NumpyRngState | None) -> None:
    """Make the global numpy RNG's state `state` again (nothing for None)."""
    numpy = sys.modules.get("numpy")
    if numpy is None or state is None:
        return
    address = _RAW.address_for(numpy)
    if address is not None and state.raw is not None and state.clean:
        numpy.random.seed(0)  # clears the cached Gaussian; key and position follow
        ctypes.memmove(address, state.raw, _RAW_BYTES)
        return
    numpy.random.set_state(state.legacy)


def _read_raw(numpy: Any) -> bytes | None:
    address = _RAW.address_for(numpy)
    return None if address is None else ctypes.string_at(address, _RAW_BYTES)


class _RawAccess:
    """Where numpy keeps the global key and position, once checked to be there."""

    def __init__(self) -> None:
        self._generator: Any = None  # the bit generator the address belongs to
        self._address: int | None = None
        self._checked = False

    def address_for(self, numpy: Any) -> int | None:
        generator = getattr(getattr(numpy.random, "mtrand", None), "_rand", None)
        generator = getattr(generator, "_bit_generator", None)
        if not self._checked or generator is not self._generator:
            self._generator, self._address = generator, _checked_address(numpy)
            self._checked = True
        return self._address


def _checked_address(numpy: Any) -> int | None:
    """The state address of numpy's global MT19937, if reading and writing it there
    gives what ``get_state`` says and what the draws continue from; else None."""
    try:
        generator = numpy.random.mtrand._rand._bit_generator
        if type(generator).__name__ != "MT19937":
            return None
        address = int(generator.ctypes.state_address)
    except Exception:
        return None
    saved = numpy.random.get_state()
    try:
        numpy.random.seed(20261204)
        numpy.random.standard_normal(3)  # leaves a Gaussian cached
        numpy.random.standard_normal(1)  # and takes it: none cached, position moved
        legacy = numpy.random.get_state()
        raw = ctypes.string_at(address, _RAW_BYTES)
        key = numpy.frombuffer(raw[: _KEY_WORDS * 4], dtype=numpy.uint32)
        position = int.from_bytes(raw[_KEY_WORDS * 4 :], sys.byteorder, signed=True)
        if legacy[3] != 0 or not numpy.array_equal(key, legacy[1]):
            return None
        if position != legacy[2]:
            return None
        expected = numpy.random.random(700)  # past a twist of the key
        numpy.random.seed(0)
        ctypes.memmove(address, raw, _RAW_BYTES)
        if not numpy.array_equal(numpy.random.random(700), expected):
            return None
        return address
    except Exception:
        return None
    finally:
        numpy.random.set_state(saved)


_RAW = _RawAccess()


__all__ = ["NumpyRngState", "restore_numpy_rng", "save_numpy_rng"]
